//! Loading AGS text into an order-preserving JSON value. (Being written: see the brief.)
