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

/// Declares an identifier type: text that converts from a `String` only explicitly, reads as
/// `&str`, compares with text, and is stored and serialised as text. Functions that take
/// several kinds of id take these, so that passing one kind for another does not compile.
macro_rules! id_type {
    ($(#[$meta:meta])* $name:ident) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
        #[derive(serde::Serialize, serde::Deserialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            /// The id in `text`.
            pub fn new(text: impl Into<String>) -> Self {
                Self(text.into())
            }

            /// The id as text.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl std::ops::Deref for $name {
            type Target = str;
            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> String {
                id.0
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }

        impl PartialEq<String> for $name {
            fn eq(&self, other: &String) -> bool {
                &self.0 == other
            }
        }

        impl PartialEq<$name> for String {
            fn eq(&self, other: &$name) -> bool {
                *self == other.0
            }
        }

        impl PartialEq<$name> for &str {
            fn eq(&self, other: &$name) -> bool {
                *self == other.0
            }
        }

        impl std::borrow::Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl PartialEq<$name> for str {
            fn eq(&self, other: &$name) -> bool {
                self == other.0
            }
        }

        impl sqlx::Type<sqlx::Any> for $name {
            fn type_info() -> sqlx::any::AnyTypeInfo {
                <String as sqlx::Type<sqlx::Any>>::type_info()
            }
        }

        impl<'r> sqlx::Decode<'r, sqlx::Any> for $name {
            fn decode(value: sqlx::any::AnyValueRef<'r>) -> Result<Self, sqlx::error::BoxDynError> {
                Ok(Self(<String as sqlx::Decode<'r, sqlx::Any>>::decode(value)?))
            }
        }

        impl<'q> sqlx::Encode<'q, sqlx::Any> for $name {
            fn encode_by_ref(
                &self,
                buf: &mut <sqlx::Any as sqlx::Database>::ArgumentBuffer<'q>,
            ) -> Result<sqlx::encode::IsNull, sqlx::error::BoxDynError> {
                <String as sqlx::Encode<'q, sqlx::Any>>::encode_by_ref(&self.0, buf)
            }
        }

        impl rusqlite::types::FromSql for $name {
            fn column_result(
                value: rusqlite::types::ValueRef<'_>,
            ) -> rusqlite::types::FromSqlResult<Self> {
                Ok(Self(value.as_str()?.to_string()))
            }
        }
    };
}

id_type! {
    /// The id of an organization.
    OrgId
}

id_type! {
    /// The id of a user.
    UserId
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_text_on_the_wire_and_compare_with_text() {
        let org = OrgId::new("abc");
        assert_eq!(serde_json::to_string(&org).unwrap(), "\"abc\"");
        let back: OrgId = serde_json::from_str("\"abc\"").unwrap();
        assert_eq!(back, org);
        let text = String::from("abc");
        assert_eq!(org, "abc");
        assert_eq!(text, org);
        assert_eq!(org, text);
        assert_eq!(&*org, "abc");
        assert_ne!(UserId::new("abc").as_str(), "abd");
    }
}
