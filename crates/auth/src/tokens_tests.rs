use super::*;
use crate::MemoryStore;

#[test]
fn deployment_ids_are_normalised() {
    let id = |b: &str| deployment_id("autogpt-local-executor", b).unwrap();
    assert_eq!(
        id("https://platform.autogpt.net"),
        account::DEFAULT_DEPLOYMENT
    );
    assert_eq!(
        id("HTTPS://Platform.AutoGPT.net:443/"),
        account::DEFAULT_DEPLOYMENT
    );
    assert_eq!(
        id("https://platform.autogpt.net/?x=1#f"),
        account::DEFAULT_DEPLOYMENT
    );
    assert_eq!(
        id("http://h.example:80/base/"),
        "autogpt-local-executor@http://h.example/base"
    );
    assert_eq!(
        id("http://h.example:8080"),
        "autogpt-local-executor@http://h.example:8080"
    );
    assert!(deployment_id("c", "ftp://x").is_err());
}

#[test]
fn legacy_tokens_migrate_only_for_the_default_deployment() {
    let s = MemoryStore::new();
    s.set("access_token", &Secret::new("la")).unwrap();
    s.set("refresh_token", &Secret::new("lr")).unwrap();
    let other = "autogpt-local-executor@https://self.hosted";
    assert!(load(&s, other).unwrap().is_empty());
    assert!(
        s.get("access_token").unwrap().is_some(),
        "ignored, not deleted"
    );
    let t = load(&s, account::DEFAULT_DEPLOYMENT).unwrap();
    assert_eq!(t.access.unwrap().expose(), "la");
    assert!(s.get("access_token").unwrap().is_none());
    assert_eq!(
        s.get(&account::refresh_token(account::DEFAULT_DEPLOYMENT))
            .unwrap()
            .unwrap()
            .expose(),
        "lr"
    );
    clear(&s, account::DEFAULT_DEPLOYMENT).unwrap();
    assert!(load(&s, account::DEFAULT_DEPLOYMENT).unwrap().is_empty());
}
