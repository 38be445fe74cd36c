//! weft-store placeholder.
