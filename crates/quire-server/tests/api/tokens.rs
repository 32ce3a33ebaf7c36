//! API tokens: created by the admin path, stored hashed, revocable.

use reqwest::Method;

use crate::harness::TestApp;

#[tokio::test]
async fn tokens_are_stored_hashed_and_can_be_revoked() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    assert!(alice.token.starts_with("quire_") && alice.token.len() > 40);

    let db = quire_server::db::Db::connect(&app.config.database_url())
        .await
        .unwrap();
    let clear: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM api_tokens WHERE token_hash = $1")
        .bind(&alice.token)
        .fetch_one(db.pool())
        .await
        .unwrap();
    let hashed: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM api_tokens WHERE token_hash = $1")
        .bind(quire_server::keys::hash_token(&alice.token))
        .fetch_one(db.pool())
        .await
        .unwrap();
    assert_eq!((clear, hashed), (0, 1));

    // A second token for the same e-mail is the same user.
    let second = quire_server::admin::create_token(&app.config, "alice@example.com", None)
        .await
        .unwrap();
    assert_ne!(second, alice.token);
    let me = app
        .call(Method::GET, "/v1/user", Some(&second), None)
        .await
        .expect(200);
    assert_eq!(me["id"], alice.id.as_str());

    let n = quire_server::admin::revoke_token(&app.config, Some(&alice.token), None)
        .await
        .unwrap();
    assert_eq!(n, 1);
    app.call(Method::GET, "/v1/user", Some(&alice.token), None)
        .await
        .expect_error(401);
    app.call(Method::GET, "/v1/user", Some(&second), None)
        .await
        .expect(200);
    let n = quire_server::admin::revoke_token(&app.config, None, Some("ALICE@example.com"))
        .await
        .unwrap();
    assert_eq!(n, 1);
    app.clock.advance_ms(app.config.access_cache_ms as i64 + 1);
    app.call(Method::GET, "/v1/user", Some(&second), None)
        .await
        .expect_error(401);
}
