//! proptest strategies for wire types (tests and the `arbitrary` feature).

use proptest::prelude::*;
use serde_json::Map;
use serde_json::Value;

use crate::ErrorCode;

/// Finite doubles, including integral ones, that survive a JSON round trip.
pub fn f64_value() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<f64>().prop_filter("finite", |f| f.is_finite()),
        (-1_000_000i64..1_000_000).prop_map(|i| i as f64),
        (0u32..2_000_000_000).prop_map(|i| f64::from(i) + 0.25),
    ]
}

/// Optional finite doubles.
pub fn opt_f64() -> impl Strategy<Value = Option<f64>> {
    proptest::option::of(f64_value())
}

/// Short vectors, so nested payloads stay small.
pub fn small_vec<T: Arbitrary>() -> impl Strategy<Value = Vec<T>> {
    proptest::collection::vec(any::<T>(), 0..4)
}

/// A word that no open wire enum knows.
pub fn unknown_word() -> impl Strategy<Value = String> {
    "zz_[a-z]{1,12}"
}

/// A small JSON object or null, for `ERROR.details`.
pub fn json_object_opt() -> impl Strategy<Value = Option<Map<String, Value>>> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        ".{0,12}".prop_map(Value::String),
    ];
    let value = leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map("[a-z_]{1,8}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    });
    proptest::option::of(
        proptest::collection::btree_map("[a-z_]{1,12}", value, 0..4)
            .prop_map(|m| m.into_iter().collect::<Map<String, Value>>()),
    )
}

impl Arbitrary for ErrorCode {
    type Parameters = ();
    type Strategy = BoxedStrategy<ErrorCode>;

    fn arbitrary_with((): ()) -> Self::Strategy {
        prop_oneof![
            proptest::sample::select(ErrorCode::ALL.to_vec()),
            "ZZ_[A-Z_]{1,12}".prop_map(ErrorCode::Unknown),
        ]
        .boxed()
    }
}

impl Arbitrary for crate::messages::control::DirectoryListRequest {
    type Parameters = ();
    type Strategy = BoxedStrategy<Self>;

    /// Only the shapes section 9.2 allows: none, both references, or both plus a cursor.
    fn arbitrary_with((): ()) -> Self::Strategy {
        use crate::values::BrowseToken;
        prop_oneof![
            Just(Self::default()),
            (
                any::<BrowseToken>(),
                any::<BrowseToken>(),
                any::<Option<BrowseToken>>()
            )
                .prop_map(|(b, d, c)| Self {
                    browse_id: Some(b),
                    directory_ref: Some(d),
                    cursor: c,
                }),
        ]
        .boxed()
    }
}
