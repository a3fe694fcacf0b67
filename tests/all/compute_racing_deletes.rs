//! Two DELETEs of one server at once (issue 44, item 7): one answers 204, the other 204 or
//! 404 as Nova answers them — never 409 "could not be deleted now" — and the server is gone.

use futures_util::future::join;
use reqwest::Method;
use serde_json::json;

use crate::helpers::{
    TestApp, create_bare_metal_flavor, create_server, one_host_with_nodes, rows, wait_for_status,
};

#[actix_web::test]
async fn two_deletes_of_one_server_at_once_answer_204_and_204_or_404() {
    let app = TestApp::spawn().await;
    one_host_with_nodes(&app, 4).await;
    let flavor = create_bare_metal_flavor(&app, "bm", "CUSTOM_BAREMETAL").await;
    for round in 0..4 {
        let body = json!({"server": {"name": format!("twice{round}"), "flavorRef": flavor,
                                     "imageRef": "6b5f4c1e-0d5e-4d8a-9a0e-2f54a5e0b6c1",
                                     "networks": "none"}});
        let (status, answer) = create_server(&app, "admin", body).await;
        assert_eq!(status, 202, "{answer}");
        let id = answer["server"]["id"].as_str().unwrap().to_owned();
        wait_for_status(&app, "admin", &id, "ACTIVE").await;
        let path = format!("/servers/{id}");
        let delete = || async { app.compute(Method::DELETE, &path).send().await };
        let ((first, _, first_body), (second, _, second_body)) = join(delete(), delete()).await;
        let mut statuses = [first, second];
        statuses.sort_unstable();
        assert!(
            statuses == [204, 204] || statuses == [204, 404],
            "round {round}: {statuses:?} {first_body} {second_body}"
        );
        let (status, _, _) = app.compute(Method::GET, &path).send().await;
        assert_eq!(status, 404, "round {round}: the server is gone");
    }
    assert_eq!(rows(&app, "SELECT count(*) FROM allocations"), 0);
}
