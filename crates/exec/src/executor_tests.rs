use super::*;

#[test]
fn duration_rounds_to_three_decimals() {
    assert_eq!(round3(Duration::from_micros(1_234_499)), 1.234);
    assert_eq!(round3(Duration::from_micros(1_234_500)), 1.235);
    assert_eq!(round3(Duration::ZERO), 0.0);
}

#[test]
fn timeout_is_lowered_never_raised_and_must_be_positive() {
    assert_eq!(Timeout::effective(None, 30).unwrap().secs(), 30);
    assert_eq!(Timeout::effective(Some(5), 30).unwrap().secs(), 5);
    assert_eq!(Timeout::effective(Some(3600), 30).unwrap().secs(), 30);
    assert_eq!(Timeout::effective(Some(i64::MAX), 30).unwrap().secs(), 30);
    assert!(matches!(
        Timeout::effective(Some(0), 30),
        Err(ExecError::InvalidTimeout)
    ));
    assert!(matches!(
        Timeout::effective(Some(-1), 30),
        Err(ExecError::InvalidTimeout)
    ));
}
