//! A macro for enums carried on the wire as fixed strings.

/// Defines a string-valued wire enum.
///
/// `closed` enums reject unknown spellings (the frame is then malformed);
/// `open` enums keep unknown spellings in an `Unknown(String)` variant so that values
/// added by a newer platform within major 1 decode (section 4).
macro_rules! wire_enum {
    (
        $(#[doc = $doc:literal])*
        closed $name:ident { $($(#[$vdoc:meta])* $variant:ident => $wire:literal,)* }
    ) => {
        $(#[doc = $doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
        pub enum $name { $($(#[$vdoc])* $variant,)* }

        impl $name {
            /// Every value, in specification order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)*];

            /// The exact wire spelling.
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $wire,)* }
            }

            /// Parses the exact wire spelling.
            pub fn from_wire(s: &str) -> Option<$name> {
                match s { $($wire => Some($name::$variant),)* _ => None }
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
                let s = std::borrow::Cow::<'de, str>::deserialize(d)?;
                $name::from_wire(&s).ok_or_else(|| {
                    serde::de::Error::custom(format_args!(
                        "unknown {} value {:?}", stringify!($name), s
                    ))
                })
            }
        }

        #[cfg(feature = "schema")]
        impl schemars::JsonSchema for $name {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }

            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                crate::schema::closed_enum(&[$($doc),*], &[$($wire),*])
            }
        }
    };
    (
        $(#[doc = $doc:literal])*
        open $name:ident { $($(#[$vdoc:meta])* $variant:ident => $wire:literal,)* }
    ) => {
        $(#[doc = $doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
        pub enum $name {
            $($(#[$vdoc])* $variant,)*
            /// A value this build does not know, kept verbatim.
            Unknown(
                #[cfg_attr(any(test, feature = "arbitrary"), proptest(strategy = "crate::arb::unknown_word()"))]
                String
            ),
        }

        impl $name {
            /// The exact wire spelling.
            pub fn as_str(&self) -> &str {
                match self { $($name::$variant => $wire,)* $name::Unknown(s) => s.as_str() }
            }

            /// Parses a wire spelling; unknown ones are kept in `Unknown`.
            pub fn from_wire(s: &str) -> $name {
                match s { $($wire => $name::$variant,)* other => $name::Unknown(other.to_owned()) }
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
                let s = std::borrow::Cow::<'de, str>::deserialize(d)?;
                Ok($name::from_wire(&s))
            }
        }

        #[cfg(feature = "schema")]
        impl schemars::JsonSchema for $name {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }

            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                crate::schema::open_enum(&[$($doc),*], &[$($wire),*])
            }
        }
    };
}

pub(crate) use wire_enum;
