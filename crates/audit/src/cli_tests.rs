use super::*;

#[test]
fn durations_follow_h19() {
    assert_eq!(
        parse_duration("90d"),
        Some(Duration::from_secs(90 * 86_400))
    );
    assert_eq!(parse_duration("12H"), Some(Duration::from_secs(12 * 3_600)));
    assert_eq!(parse_duration("30m"), Some(Duration::from_secs(1_800)));
    assert_eq!(parse_duration("0s"), Some(Duration::ZERO));
    for bad in [
        "",
        "d",
        "-1d",
        "+1d",
        "1.5d",
        "1_0d",
        " 1d",
        "1 d",
        "1w",
        "1",
        "１d",
        "99999999999999999999d",
    ] {
        assert_eq!(parse_duration(bad), None, "{bad:?}");
    }
}
