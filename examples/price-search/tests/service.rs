//! The service end to end: keel-server and the HTTP service on free loopback
//! ports, a small catalogue loaded into all three back ends, and every back end
//! asked the same questions over HTTP. They must give the same answers.

use keel_price_search::data::{generate, request_json, Price};
use keel_price_search::http::{router, AppState};
use keel_price_search::load;
use keel_price_search::search::KeelSearch;
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const BACKENDS: [&str; 3] = ["map", "bitmap", "keel"];

/// POST `body` to `path`; the status and the body of the reply.
async fn post(port: u16, path: &str, body: &str) -> (u16, String) {
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect to the service");
    let req = format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).await.expect("send");
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).await.expect("read the reply");
    let raw = String::from_utf8(raw).expect("a UTF-8 reply");
    let (head, body) = raw.split_once("\r\n\r\n").expect("a header block");
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .expect("a status line");
    (status, body.to_string())
}

/// The same request to every back end: all must answer alike; that answer.
async fn ask_all(port: u16, path: &str, body: &str) -> (u16, String) {
    let mut answers = Vec::new();
    for b in BACKENDS {
        answers.push(post(port, &path.replace("{backend}", b), body).await);
    }
    for (b, a) in BACKENDS.iter().zip(&answers) {
        assert_eq!(a, &answers[0], "{b} differs from map for {path} {body}");
    }
    answers.swap_remove(0)
}

fn with_id(mut p: Price, id: &str, is_default: bool) -> Price {
    p.id = id.into();
    p.is_default = is_default;
    p
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_backends_answer_alike() {
    let server = keel_testkit::start("keel", keel_testkit::free_port());
    let url = format!("redis://127.0.0.1:{}", server.port);
    let keel = KeelSearch::connect(&url, "prices", 2)
        .await
        .expect("keel-server");

    // A slice of one offering, plus prices sharing the conditions of others:
    // #10 has two twins, one of them the default; #20 has a twin, no default.
    let mut prices: Vec<Price> = generate(1, 11).into_iter().take(1500).collect();
    let (p10, p20) = (prices[10].clone(), prices[20].clone());
    prices.push(with_id(p10.clone(), "twin-plain", false));
    prices.push(with_id(p10.clone(), "twin-default", true));
    prices.push(with_id(p20.clone(), "twin-ambiguous", false));
    let expected = prices.clone();
    let (map, bitmap, report) = load(move || prices, Some(&keel), || 0)
        .await
        .expect("load keel-server");
    assert_eq!(report.prices, 1503);
    assert_eq!(report.keel.map(|k| k.0), Some(1503));

    let state = Arc::new(AppState {
        map,
        bitmap,
        keel: Some(keel),
        stats: report.to_json(2),
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a free port");
    let port = listener.local_addr().expect("bound").port();
    tokio::spawn(async move { axum::serve(listener, router(state)).await });

    let one = "/v1/search/{backend}/prices";
    let bulk = "/v5/search/{backend}/bulk/prices";

    // Every price but the duplicated ones is found by its own conditions.
    for p in expected
        .iter()
        .step_by(97)
        .filter(|p| p.id != p10.id && p.id != p20.id)
    {
        let (status, body) = ask_all(port, one, &request_json(p, None)).await;
        assert_eq!(status, 200, "{}", p.id);
        assert_eq!(
            body.as_bytes(),
            [p.response_json(), b"\n".to_vec()].concat()
        );
    }

    // Several match and one is the default: the default is the answer.
    let (status, body) = ask_all(port, one, &request_json(&p10, None)).await;
    assert_eq!(status, 200);
    assert!(body.starts_with("{\"id\":\"twin-default\""), "{body}");

    // Several match and none is the default: nothing is found.
    assert_eq!(
        ask_all(port, one, &request_json(&p20, None)).await,
        (404, "unable find price\n".to_string())
    );

    // Conditions nothing meets: an unknown value, offering, group or spec.
    let mut miss = expected[3].clone();
    miss.values[1] = Arc::from("3GB");
    for m in [
        miss.clone(),
        Price {
            offering: Arc::from("nope"),
            ..expected[3].clone()
        },
        Price {
            group: Arc::from("group9"),
            ..expected[3].clone()
        },
        Price {
            spec: Arc::from("XYZ"),
            ..expected[3].clone()
        },
    ] {
        assert_eq!(
            ask_all(port, one, &request_json(&m, None)).await,
            (404, "unable find price\n".to_string())
        );
    }

    // Bad bodies.
    for bad in ["", "{\"offeringId\":", "[1,2]", "{\"charValues\":7}"] {
        let (status, _) = ask_all(port, one, bad).await;
        assert_eq!(status, 400, "{bad:?}");
    }

    // Bulk: answers in request order, a miss as null, each with its id.
    let items = [
        request_json(&expected[5], Some(40)),
        request_json(&miss, Some(1)),
        request_json(&p10, Some(65535)),
    ];
    let (status, body) = ask_all(port, bulk, &format!("[{}]", items.join(","))).await;
    assert_eq!(status, 200);
    let want = format!(
        "[{{\"price\":{},\"id\":40}}\n,{{\"price\":null,\"id\":1}}\n,{{\"price\":{},\"id\":65535}}\n]",
        String::from_utf8(expected[5].response_json()).unwrap(),
        String::from_utf8(expected[1501].response_json()).unwrap(),
    );
    assert_eq!(body, want);
    assert_eq!(ask_all(port, bulk, "[]").await, (200, "[]".to_string()));
    // A bulk body past axum's default 2 MB limit is taken.
    let many: Vec<String> = (0..7000u16)
        .map(|i| request_json(&expected[(i % 1500) as usize], Some(i)))
        .collect();
    let many = format!("[{}]", many.join(","));
    assert!(many.len() > 2 << 20);
    let (status, body) = ask_all(port, bulk, &many).await;
    assert_eq!(status, 200);
    assert_eq!(
        body.matches("{\"price\":{").count(),
        6995,
        "all found but the 5 ambiguous"
    );
    assert!(body.ends_with(",\"id\":6999}\n]"));
    for bad in [
        "",
        "{}",
        &request_json(&expected[5], Some(1)),
        &format!(
            "[{},\"id\":70000}}]",
            request_json(&expected[5], None).trim_end_matches('}')
        ),
        "[{\"offeringId\":1}]",
    ] {
        assert_eq!(
            ask_all(port, bulk, bad).await,
            (400, "Unable decode body\n".to_string()),
            "{bad:?}"
        );
    }

    // Unknown back end.
    for path in ["/v1/search/redis/prices", "/v5/search/redis/bulk/prices"] {
        assert_eq!(post(port, path, "{}").await.0, 404);
    }
    drop(server);
}
