//! AGX, the AGS expression language. (Being written.)
