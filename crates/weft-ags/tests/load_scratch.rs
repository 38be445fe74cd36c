use saphyr_parser::Parser;
#[test]
fn explore() {
    for src in ["a: !!str 1\nb: !foo x\nc: !<tag:yaml.org,2002:int> 3\nd: ! 12\n", "- a: 1\n  b: 2\n- [x]\n", "", "---\n", "# c\n", "a: 1\n---\nb: 2\n", "a: 1\n...\n", "&a x: 1\n*a : 2\n"] {
        println!("=== {src:?}");
        for ev in Parser::new_from_str(src) {
            match ev { Ok((e, s)) => println!("{:?} @ {}:{}", e, s.start.line(), s.start.col()), Err(e) => { println!("ERR {e}"); break } }
        }
    }
    let long = format!("\"{}\": 1\n", "k".repeat(1100));
    for ev in Parser::new_from_str(&long) { if let Err(e) = ev { println!("long key ERR {e}"); } }
    let ex = "? \"abc\"\n:\n  b: 1\n- x\n";
    for ev in Parser::new_from_str(ex) { println!("{:?}", ev.map(|e| e.0)); }
    for s in ["1.", ".5", "+1.5", "1.e5", "1E+5", "-0"] { println!("{s} -> {:?}", s.parse::<f64>()); }
    println!("{:?}", serde_json::from_str::<serde_json::Value>("-0"));
    println!("{:?}", serde_json::from_str::<serde_json::Value>("[1,\n  2,\n   ]"));
}
