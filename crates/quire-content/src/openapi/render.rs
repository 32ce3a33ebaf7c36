//! Rendering one operation of a specification as safe HTML.
