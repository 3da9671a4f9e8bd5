use super::*;

#[test]
fn chords_parse_case_insensitively_with_aliases() {
    assert_eq!(
        parse_chord("Ctrl+S").unwrap(),
        vec![Key::Mod(Modifier::Ctrl), Key::Char('s')]
    );
    assert_eq!(
        parse_chord(" cmd + shift + t ").unwrap(),
        vec![
            Key::Mod(Modifier::Super),
            Key::Mod(Modifier::Shift),
            Key::Char('t')
        ]
    );
    assert_eq!(parse_chord("plus").unwrap(), vec![Key::Char('+')]);
    assert_eq!(parse_chord("F5").unwrap(), vec![Key::F(5)]);
    assert_eq!(parse_chord("f24").unwrap(), vec![Key::F(24)]);
    assert_eq!(parse_chord("!").unwrap(), vec![Key::Char('!')]);
    assert_eq!(parse_chord("num7").unwrap(), vec![Key::Num(7)]);
    assert_eq!(
        parse_chord("page_down").unwrap(),
        vec![Key::Named(Named::PageDown)]
    );
    assert_eq!(parse_chord("ctrl++a").unwrap().len(), 2);
}

#[test]
fn bad_chords_are_refused_with_the_spec_reason() {
    let e = parse_chord("ctrl+bogus").unwrap_err();
    assert_eq!(e.code, shim_protocol::ErrorCode::FeatureNotSupported);
    assert_eq!(e.details.unwrap()["reason"], "unknown key name 'bogus'");
    let e = parse_chord(" + ").unwrap_err();
    assert_eq!(e.details.unwrap()["reason"], "key is required");
    assert!(parse_chord("a+b+c+d+e+f+g+h+i").is_err());
    assert!(parse_chord("f25").is_err());
    assert!(parse_chord("f0").is_err());
    assert!(parse_chord("é").is_err());
}

#[test]
fn modifiers_normalise() {
    assert_eq!(parse_modifier("Control").unwrap(), Modifier::Ctrl);
    assert_eq!(parse_modifier("option").unwrap(), Modifier::Alt);
    assert_eq!(parse_modifier("META").unwrap(), Modifier::Super);
    let e = parse_modifier("hyper").unwrap_err();
    assert_eq!(e.details.unwrap()["reason"], "unknown modifier 'hyper'");
}
