//! Nova's default policy, exactly (issue 44, item 5): a project's `reader` reads and changes
//! nothing, its `member` (or an admin) creates, deletes and acts on servers, a role Nova does
//! not know grants nothing, and each 403 names the rule of the action refused. Under noauth2
//! the roles are `X-Roles` (a token without it is a member of its project); under Keystone,
//! the token's (see `keystone::compute_follows_nova_s_policy`).

use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{IMAGE, KEY, TestApp, create_bare_metal_flavor, one_host_four_nodes, rows};

fn refused(rule: &str) -> String {
    format!("Policy doesn't allow {rule} to be performed.")
}

/// A `POST /servers` of one server of `flavor` by `token` with `roles` (none: no `X-Roles`).
pub async fn create(app: &TestApp, token: &str, roles: Option<&str>, flavor: &str) -> (u16, Value) {
    let mut request = app
        .compute(Method::POST, "/servers")
        .version("2.92")
        .token(token)
        .json(
            json!({"server": {"name": "s", "imageRef": IMAGE, "flavorRef": flavor,
                                  "networks": "none"}}),
        );
    if let Some(roles) = roles {
        request = request.roles(roles);
    }
    let (status, _, body) = request.send().await;
    (status, body)
}

async fn call(
    app: &TestApp,
    method: Method,
    path: &str,
    roles: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut request = app
        .compute(method, path)
        .version("2.92")
        .token("bob:p1")
        .roles(roles);
    if let Some(body) = body {
        request = request.json(body);
    }
    let (status, _, answer) = request.send().await;
    (status, answer)
}

#[actix_web::test]
async fn readers_and_unknown_roles_change_nothing_and_members_do() {
    let app = TestApp::spawn().await;
    one_host_four_nodes(&app).await;
    let flavor = create_bare_metal_flavor(&app, "bm", "CUSTOM_BAREMETAL").await;

    for roles in ["reader", "foo", "reader,foo", "READER"] {
        let (status, body) = create(&app, "bob:p1", Some(roles), &flavor).await;
        assert_eq!(status, 403, "X-Roles {roles}: {body}");
        assert_eq!(
            body["forbidden"]["message"],
            refused("os_compute_api:servers:create")
        );
    }
    assert_eq!(
        rows(&app, "SELECT count(*) FROM instances"),
        0,
        "nothing written"
    );

    // A member (a token without X-Roles is one) creates; so does X-Roles member or admin.
    let (status, body) = create(&app, "alice:p1", None, &flavor).await;
    assert_eq!(status, 202, "{body}");
    let id = body["server"]["id"].as_str().unwrap().to_owned();
    let (status, body) = create(&app, "carol:p1", Some("Member"), &flavor).await;
    assert_eq!(status, 202, "{body}");
    let server = format!("/servers/{id}");

    // A reader of the project reads alice's server and changes nothing of it.
    let (status, body) = call(&app, Method::GET, &server, "reader", None).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = call(&app, Method::GET, "/servers/detail", "reader", None).await;
    assert_eq!(status, 200, "{body}");
    a_reader_and_a_stranger_role_are_refused(&app, &server).await;
    assert_eq!(
        rows(
            &app,
            &format!("SELECT count(*) FROM instances WHERE uuid = '{id}' AND deleted_at IS NULL")
        ),
        1,
        "the server is still there"
    );
    // Another project's caller is told nothing exists, whatever its roles.
    let (status, _, _) = app
        .compute(Method::DELETE, &server)
        .token("mallory:p2")
        .roles("member")
        .send()
        .await;
    assert_eq!(status, 404);
}

/// What a reader, and a role Nova does not know, are refused on `server`: each 403 naming its
/// rule.
async fn a_reader_and_a_stranger_role_are_refused(app: &TestApp, server: &str) {
    for (roles, method, path, body, rule) in [
        (
            "reader,foo",
            Method::DELETE,
            server.to_owned(),
            None,
            "servers:delete",
        ),
        (
            "reader",
            Method::POST,
            format!("{server}/action"),
            Some(json!({"os-stop": null})),
            "servers:stop",
        ),
        ("foo", Method::GET, server.to_owned(), None, "servers:show"),
        (
            "foo",
            Method::GET,
            "/servers".to_owned(),
            None,
            "servers:index",
        ),
        (
            "foo",
            Method::GET,
            "/servers/detail".to_owned(),
            None,
            "servers:detail",
        ),
    ] {
        let (status, answer) = call(app, method.clone(), &path, roles, body).await;
        assert_eq!(status, 403, "{roles} {method} {path}: {answer}");
        assert_eq!(
            answer["forbidden"]["message"],
            refused(&format!("os_compute_api:{rule}")),
            "{roles} {method} {path}"
        );
    }
}

#[actix_web::test]
async fn a_key_pair_refusal_names_its_action_s_rule() {
    let app = TestApp::spawn().await;
    let body = json!({"keypair": {"name": "k", "public_key": KEY, "user_id": "bob"}});
    for (method, path, body, action) in [
        (Method::POST, "/os-keypairs", Some(body), "create"),
        (Method::GET, "/os-keypairs?user_id=bob", None, "index"),
        (Method::GET, "/os-keypairs/k?user_id=bob", None, "show"),
        (Method::DELETE, "/os-keypairs/k?user_id=bob", None, "delete"),
    ] {
        let mut request = app
            .compute(method.clone(), path)
            .version("2.10")
            .token("alice:p1");
        if let Some(body) = body {
            request = request.json(body);
        }
        let (status, _, answer) = request.send().await;
        assert_eq!(status, 403, "{method} {path}: {answer}");
        assert_eq!(
            answer["forbidden"]["message"],
            refused(&format!("os_compute_api:os-keypairs:{action}")),
            "{method} {path}"
        );
    }
    assert_eq!(rows(&app, "SELECT count(*) FROM key_pairs"), 0);
}
