//! Opaque random identifiers and secrets.

use rand::distributions::Alphanumeric;
use rand::Rng;

/// A new opaque resource id: 20 random alphanumeric characters.
pub fn new_id() -> String {
    random_string(20)
}

/// `len` random alphanumeric characters from the operating system's generator.
pub fn random_string(len: usize) -> String {
    rand::rngs::OsRng
        .sample_iter(&Alphanumeric)
        .take(len)
        .map(char::from)
        .collect()
}
