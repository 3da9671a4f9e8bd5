//! Value syntaxes shared by several messages (section 3.4), parsed once into newtypes.

use serde::Deserialize;
use serde::Deserializer;
use serde::Serialize;

use crate::wire_enum::wire_enum;

/// Why a value failed its syntax rule. The text names the rule, never the value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SyntaxError(pub &'static str);

macro_rules! string_newtype {
    (
        $(#[doc = $doc:literal])* $name:ident, $check:path, $strategy:literal,
        schema: { $($schema:tt)* }
    ) => {
        $(#[doc = $doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(try_from = "String", into = "String")]
        #[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
        pub struct $name(
            #[cfg_attr(any(test, feature = "arbitrary"), proptest(regex = $strategy))]
            String,
        );

        impl $name {
            /// Checks the syntax and wraps the value.
            pub fn new(value: impl Into<String>) -> Result<Self, SyntaxError> {
                let value = value.into();
                $check(&value)?;
                Ok($name(value))
            }

            /// The value as sent on the wire.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl TryFrom<String> for $name {
            type Error = SyntaxError;
            fn try_from(value: String) -> Result<Self, SyntaxError> {
                $name::new(value)
            }
        }

        impl From<$name> for String {
            fn from(value: $name) -> String {
                value.0
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        // The syntax rule of `Self::new` as a `pattern` or length bounds.
        #[cfg(feature = "schema")]
        impl schemars::JsonSchema for $name {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }

            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                let mut schema = schemars::json_schema!({ "type": "string", $($schema)* });
                crate::schema::describe(&mut schema, &[$($doc),*]);
                schema
            }
        }
    };
}

/// Tag in the error text of a bad browse token; the decoder maps it to
/// `DIRECTORY_REFERENCE_INVALID` (section 3.6).
pub(crate) const BROWSE_TOKEN_RULE: &str = "invalid directory reference: must be 1-256 characters";
/// Tag in the error text of a bad root grant; the decoder maps it to `ROOT_GRANT_INVALID`.
pub(crate) const ROOT_GRANT_RULE: &str = "invalid root grant: must be 1-131072 characters";

fn check_session_id(s: &str) -> Result<(), SyntaxError> {
    const RULE: SyntaxError =
        SyntaxError("invalid session id: must match ^[A-Za-z0-9][A-Za-z0-9._:-]{0,255}$");
    let mut chars = s.chars();
    match chars.next() {
        Some(c) if c.is_ascii_alphanumeric() => {}
        _ => return Err(RULE),
    }
    if s.len() > 256
        || !chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '-'))
    {
        return Err(RULE);
    }
    Ok(())
}

fn check_browse_token(s: &str) -> Result<(), SyntaxError> {
    let n = s.chars().count();
    if (1..=256).contains(&n) {
        Ok(())
    } else {
        Err(SyntaxError(BROWSE_TOKEN_RULE))
    }
}

fn check_fingerprint(s: &str) -> Result<(), SyntaxError> {
    if s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        Ok(())
    } else {
        Err(SyntaxError(
            "invalid fingerprint: must be 64 lower-case hex digits",
        ))
    }
}

fn check_root_grant(s: &str) -> Result<(), SyntaxError> {
    let n = s.chars().count();
    if (1..=131_072).contains(&n) {
        Ok(())
    } else {
        Err(SyntaxError(ROOT_GRANT_RULE))
    }
}

string_newtype!(
    /// A session id: `^[A-Za-z0-9][A-Za-z0-9._:-]{0,255}$` (section 3.4). Values such as
    /// `../control?admin=true` are refused, so a session id can never escape a URL path.
    SessionId,
    check_session_id,
    "[A-Za-z0-9][A-Za-z0-9._:-]{0,40}",
    schema: { "pattern": "^[A-Za-z0-9][A-Za-z0-9._:-]{0,255}$" }
);
string_newtype!(
    /// An opaque browse token (`browse_id`, `directory_ref`, `cursor`): 1-256 characters.
    BrowseToken,
    check_browse_token,
    "[A-Za-z0-9_-]{1,64}",
    schema: { "minLength": 1, "maxLength": 256 }
);
string_newtype!(
    /// A filesystem fingerprint: 64 lower-case hex digits (section 9.4).
    Fingerprint,
    check_fingerprint,
    "[0-9a-f]{64}",
    schema: { "pattern": "^[0-9a-f]{64}$" }
);
string_newtype!(
    /// A root grant string: 1-131 072 characters (section 9.5). Its signature is checked
    /// by the daemon, not here.
    RootGrant,
    check_root_grant,
    "v1\\.[A-Za-z0-9_-]{1,80}\\.[A-Za-z0-9_-]{43}",
    schema: { "minLength": 1, "maxLength": 131_072 }
);

wire_enum! {
    /// A capability name (section 6). Unknown names are kept so a grant list from a newer
    /// platform still decodes.
    open Capability {
        /// Command execution.
        Shell => "shell",
        /// File operations.
        Files => "files",
        /// Screenshots and input.
        ComputerUse => "computer_use",
        /// Local model completions.
        LocalLlm => "local_llm",
        /// Serial ports (never granted in 1.1).
        HardwareSerial => "hardware_serial",
        /// USB listing (never granted in 1.1).
        HardwareUsb => "hardware_usb",
        /// GPIO (never granted in 1.1).
        HardwareGpio => "hardware_gpio",
        /// Workflow recording (never advertised).
        Recording => "recording",
        /// The control plane.
        DirectoryBrowse => "directory_browse",
    }
}

impl Capability {
    /// The capabilities the platform can grant (section 5.2 step 3).
    pub const PLATFORM_GRANTABLE: &'static [Capability] = &[
        Capability::Shell,
        Capability::Files,
        Capability::ComputerUse,
        Capability::LocalLlm,
        Capability::Recording,
        Capability::DirectoryBrowse,
    ];
}

/// Deserialisers for integer fields that also accept integral JSON numbers such as
/// `100.0` (COMPUTER_USE_HW.md section 4) and reject fractions and out-of-range values.
pub mod lenient_int {
    use serde::Deserialize;
    use serde::Deserializer;
    use serde::de::Error;

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Num {
        I(i64),
        U(u64),
        F(f64),
    }

    fn convert<T: TryFrom<i64> + TryFrom<u64>, E: Error>(n: Num) -> Result<T, E> {
        let out_of_range = || E::custom("integer out of range");
        match n {
            Num::I(i) => T::try_from(i).map_err(|_| out_of_range()),
            Num::U(u) => T::try_from(u).map_err(|_| out_of_range()),
            Num::F(f) => {
                if f.fract() != 0.0 || !f.is_finite() {
                    return Err(E::custom("expected an integer"));
                }
                // Exact for every value in i64 range; the cast saturates outside it and
                // the bounds check below rejects those.
                // -2^63 is exact as a double; i64 covers [-2^63, 2^63).
                const LOW: f64 = i64::MIN as f64;
                if !(LOW..-LOW).contains(&f) {
                    return Err(out_of_range());
                }
                #[allow(clippy::cast_possible_truncation)]
                let i = f as i64;
                T::try_from(i).map_err(|_| out_of_range())
            }
        }
    }

    /// A required integer.
    pub fn de<'de, D, T>(d: D) -> Result<T, D::Error>
    where
        D: Deserializer<'de>,
        T: TryFrom<i64> + TryFrom<u64>,
    {
        convert(Num::deserialize(d)?)
    }

    /// An optional integer (`null` or absent is `None`).
    pub fn de_opt<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
    where
        D: Deserializer<'de>,
        T: TryFrom<i64> + TryFrom<u64>,
    {
        match Option::<Num>::deserialize(d)? {
            None => Ok(None),
            Some(n) => convert(n).map(Some),
        }
    }
}

/// Deserialises a strictly positive integer (`> 0`).
pub(crate) fn positive<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: TryFrom<i64> + TryFrom<u64> + PartialOrd + Default,
{
    let v: T = lenient_int::de(d)?;
    if v > T::default() {
        Ok(v)
    } else {
        Err(serde::de::Error::custom("must be greater than 0"))
    }
}

/// Deserialises an optional strictly positive integer.
pub(crate) fn positive_opt<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: TryFrom<i64> + TryFrom<u64> + PartialOrd + Default,
{
    match lenient_int::de_opt::<D, T>(d)? {
        Some(v) if v <= T::default() => Err(serde::de::Error::custom("must be greater than 0")),
        other => Ok(other),
    }
}
