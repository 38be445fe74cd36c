"""A small MCP server (official Python SDK, mcp 2.3.0) that weft-mcp's tests run over stdio.

Tools: `add` (two integers), `echo` (a text), `getenv` (what the server was given), `big` (a text of `n` bytes, for the output cap),
`sleep` (for the timeout), `fail` (a tool error), `crash` (the process exits mid-call).
With `--crash-on-start` it exits before it answers anything (a server that cannot start); with
`--http PORT` it serves streamable HTTP on 127.0.0.1:PORT/mcp instead of stdio.
"""

import os
import sys
import time

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

if "--crash-on-start" in sys.argv:
    print("weft-test-server: cannot open its database", file=sys.stderr)
    sys.exit(3)

mcp = MCPServer("weft-test-server")


@mcp.tool()
def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b


@mcp.tool()
def echo(text: str) -> str:
    """Returns the text."""
    return text


@mcp.tool()
def getenv(name: str) -> str:
    """Returns the server's environment variable `name`, or `<unset>`."""
    return os.environ.get(name, "<unset>")


@mcp.tool()
def big(n: int) -> str:
    """Returns n bytes of text."""
    return "x" * n


@mcp.tool()
def sleep(seconds: float) -> str:
    """Sleeps, then says so."""
    time.sleep(seconds)
    return "slept"


@mcp.tool()
def fail(message: str) -> str:
    """Raises a tool error (its message reaches the client; other exceptions' do not)."""
    raise ToolError(message)


@mcp.tool()
def crash() -> str:
    """Exits the server mid-call."""
    os._exit(7)


if __name__ == "__main__":
    if "--http" in sys.argv:
        port = int(sys.argv[sys.argv.index("--http") + 1])
        mcp.run("streamable-http", host="127.0.0.1", port=port)
    else:
        mcp.run("stdio")
