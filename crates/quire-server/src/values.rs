//! The closed value sets of the API, each parsed and stored in one place: the wire name is
//! the stored text, and a stored value outside the set is a decode error, never a default.

use sqlx::any::{Any, AnyTypeInfo, AnyValueRef};
use sqlx::encode::IsNull;
use sqlx::error::BoxDynError;
use sqlx::{Decode, Encode, Type};

/// Declares a closed value set: the enum, its wire names, serde in both directions (with the
/// allowed values in the error), and storage as text.
macro_rules! closed_set {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vmeta])* $variant),+
        }

        impl $name {
            /// Every value, in the official order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The wire (and stored) name.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }

            /// Parses a wire name.
            pub fn parse(text: &str) -> Option<Self> {
                match text {
                    $($text => Some($name::$variant),)+
                    _ => None,
                }
            }

            /// The allowed wire names, for error messages.
            pub fn names() -> String {
                Self::ALL.iter().map(|v| format!("`{}`", v.as_str())).collect::<Vec<_>>().join(", ")
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
                $name::parse(&text).ok_or_else(|| {
                    serde::de::Error::custom(format!(
                        "unknown value `{text}`, expected one of {}",
                        $name::names()
                    ))
                })
            }
        }

        impl Type<Any> for $name {
            fn type_info() -> AnyTypeInfo {
                <String as Type<Any>>::type_info()
            }
        }

        impl<'r> Decode<'r, Any> for $name {
            fn decode(value: AnyValueRef<'r>) -> Result<Self, BoxDynError> {
                let text = <String as Decode<'r, Any>>::decode(value)?;
                $name::parse(&text).ok_or_else(|| {
                    format!(concat!("stored ", stringify!($name), " `{}` is not a known value"), text).into()
                })
            }
        }

        impl<'q> Encode<'q, Any> for $name {
            fn encode_by_ref(
                &self,
                buf: &mut <Any as sqlx::Database>::ArgumentBuffer<'q>,
            ) -> Result<IsNull, BoxDynError> {
                <&str as Encode<'q, Any>>::encode(self.as_str(), buf)
            }
        }

        impl rusqlite::types::FromSql for $name {
            fn column_result(
                value: rusqlite::types::ValueRef<'_>,
            ) -> rusqlite::types::FromSqlResult<Self> {
                let text = value.as_str()?;
                $name::parse(text).ok_or_else(|| {
                    rusqlite::types::FromSqlError::Other(
                        format!(concat!("stored ", stringify!($name), " `{}` is not a known value"), text).into(),
                    )
                })
            }
        }
    };
}

closed_set! {
    /// `ChangeRequestStatus`.
    ChangeRequestStatus {
        /// Not yet ready for review.
        Draft = "draft",
        /// Open for review.
        Open = "open",
        /// Closed without merging.
        Archived = "archived",
        /// Merged into the space.
        Merged = "merged",
    }
}

closed_set! {
    /// `ContentVisibility`.
    Visibility {
        /// Anyone, indexed.
        Public = "public",
        /// Anyone with the link, not indexed.
        Unlisted = "unlisted",
        /// Holders of a share link.
        ShareLink = "share-link",
        /// Visitors with a signed token.
        VisitorAuth = "visitor-auth",
        /// As the parent collection.
        InCollection = "in-collection",
        /// Members with access only.
        Private = "private",
    }
}

closed_set! {
    /// `SpaceEditMode`.
    EditMode {
        /// Content changes through change requests and live edits.
        Live = "live",
        /// Nothing can be merged.
        Locked = "locked",
    }
}

closed_set! {
    /// The `type` of a `Revision`.
    RevisionType {
        /// Edits to a change request.
        Edits = "edits",
        /// A change request merged into the space.
        Merge = "merge",
        /// A change request updated from the space.
        Update = "update",
        /// A rollback to an earlier revision.
        Rollback = "rollback",
        /// Computed content.
        Computed = "computed",
    }
}

closed_set! {
    /// The `status` of a `Comment`.
    CommentStatus {
        /// Open for discussion.
        Open = "open",
        /// Resolved.
        Resolved = "resolved",
    }
}

closed_set! {
    /// `TeamMemberRole`.
    TeamRole {
        /// Manages the team.
        Owner = "owner",
        /// A member.
        Member = "member",
    }
}

closed_set! {
    /// `SiteType`: the plan of a site.
    SiteType {
        /// The free plan.
        Basic = "basic",
        /// Premium.
        Premium = "premium",
        /// Ultimate.
        Ultimate = "ultimate",
        /// Sponsored.
        Sponsored = "sponsored",
        /// The former basic plan.
        LegacyBasic = "legacy-basic",
        /// The former premium plan.
        LegacyPremium = "legacy-premium",
    }
}

closed_set! {
    /// `SiteVisibility`: who reads a published site.
    SiteVisibility {
        /// Anyone, indexed.
        Public = "public",
        /// Anyone with the address, not indexed.
        Unlisted = "unlisted",
        /// Holders of an active share link.
        ShareLink = "share-link",
        /// Visitors with a signed token.
        VisitorAuth = "visitor-auth",
    }
}

closed_set! {
    /// The `backend` of `SitePublishingAuth`: who signs a site's visitor tokens.
    VisitorAuthBackend {
        /// The site owner's own service, with the site's private key.
        Custom = "custom",
        /// The integration installed on the site.
        Integration = "integration",
    }
}

closed_set! {
    /// `SiteAgentsContext`.
    AgentsContext {
        /// Agents do not read the site.
        Excluded = "excluded",
        /// Agents read the site.
        Included = "included",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_values_are_refused() {
        for v in ChangeRequestStatus::ALL {
            assert_eq!(ChangeRequestStatus::parse(v.as_str()), Some(*v));
            let json = serde_json::to_string(v).unwrap();
            assert_eq!(
                serde_json::from_str::<ChangeRequestStatus>(&json).unwrap(),
                *v
            );
        }
        let err = serde_json::from_str::<Visibility>("\"secret\"").unwrap_err();
        assert!(err.to_string().contains("`in-collection`"), "{err}");
        assert_eq!(Visibility::parse("Public"), None);
    }
}
