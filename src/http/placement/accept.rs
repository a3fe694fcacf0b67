//! The Accept header as Placement's web framework (webob) reads it, on actix-web's typed
//! `Accept`: an offer's quality is the one of the most specific range that matches it
//! (`type/subtype`, then `type/*`, then `*/*`; a range with parameters matches no offer of
//! ours, which carry none), a quality of 0 refuses it, and offers of equal quality keep the
//! order the server gives them. A header that does not parse counts as none (webob's
//! `AcceptInvalidHeader`).

use actix_web::HttpMessage;
use actix_web::http::header::{self, Header as _, Quality, QualityItem};
use actix_web::mime::Mime;

/// The ranges the client sent; `None` without a header or with one that does not parse
/// whole (actix skips the items it cannot read; webob then takes the header for none).
fn ranges(request: &impl HttpMessage) -> Option<Vec<QualityItem<Mime>>> {
    let sent = request.headers().get(header::ACCEPT)?.to_str().ok()?;
    let items = sent
        .split(',')
        .filter(|item| !item.trim().is_empty())
        .count();
    let parsed = header::Accept::parse(request).ok()?.0;
    (items > 0 && parsed.len() == items).then_some(parsed)
}

/// `acceptable_offers`: the offers the ranges take, best first.
fn acceptable<'a>(ranges: &[QualityItem<Mime>], offers: &[&'a str]) -> Vec<&'a str> {
    let mut taken: Vec<(Quality, usize, &'a str)> = Vec::new();
    for (index, offer) in offers.iter().enumerate() {
        let (offer_type, offer_subtype) = offer.split_once('/').unwrap_or((offer, ""));
        let mut best: Option<(u8, Quality)> = None;
        for range in ranges {
            let essence = range.item.essence_str().to_ascii_lowercase();
            let (range_type, range_subtype) = essence.split_once('/').unwrap_or((&essence, ""));
            let specificity = if range_type == offer_type && range_subtype == offer_subtype {
                if range.item.params().next().is_some() {
                    continue;
                }
                3
            } else if range_subtype == "*" && range_type == offer_type {
                2
            } else if essence == "*/*" {
                1
            } else {
                continue;
            };
            if best.is_none_or(|(most, _)| specificity > most) {
                best = Some((specificity, range.quality));
            }
        }
        if let Some((_, quality)) = best
            && quality > Quality::ZERO
        {
            taken.push((quality, index, offer));
        }
    }
    taken.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    taken.into_iter().map(|(_, _, offer)| offer).collect()
}

/// Whether the client takes JSON (Placement's `check_accept("application/json")`): yes
/// without a usable header.
pub(super) fn accepts_json(request: &impl HttpMessage) -> bool {
    ranges(request).is_none_or(|ranges| !acceptable(&ranges, &["application/json"]).is_empty())
}

/// Whether an error is answered as webob's HTML page rather than JSON: Placement makes a
/// missing Accept or `*/*` JSON; otherwise HTML when the client takes it at least as well as
/// JSON (webob offers HTML first), or when the header does not parse.
pub(super) fn wants_html(request: &impl HttpMessage) -> bool {
    let Some(sent) = request.headers().get(header::ACCEPT) else {
        return false;
    };
    if sent.as_bytes().trim_ascii() == b"*/*" {
        return false;
    }
    match ranges(request) {
        None => true,
        Some(ranges) => {
            acceptable(&ranges, &["text/html", "application/json"]).first() == Some(&"text/html")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::test::TestRequest;

    fn request(accept: &str) -> actix_web::HttpRequest {
        TestRequest::default()
            .insert_header((header::ACCEPT, accept))
            .to_http_request()
    }

    #[test]
    fn qualities_decide_and_zero_refuses() {
        assert!(accepts_json(&TestRequest::default().to_http_request()));
        for taken in [
            "application/json",
            "*/*",
            "application/*",
            "text/html,*/*;q=0.8",
            "foo",
            "foo, text/plain",
        ] {
            assert!(accepts_json(&request(taken)), "{taken}");
        }
        for refused in [
            "text/plain",
            "application/json;q=0",
            "text/html,application/xhtml+xml,application/xml;q=0.9",
            "*/*, application/json;q=0",
            "application/json;charset=utf-8",
        ] {
            assert!(!accepts_json(&request(refused)), "{refused}");
        }
    }

    #[test]
    fn errors_are_html_when_html_is_taken_first() {
        assert!(!wants_html(&TestRequest::default().to_http_request()));
        assert!(!wants_html(&request("*/*")));
        assert!(!wants_html(&request("application/json")));
        assert!(!wants_html(&request("text/html;q=0.5, application/json")));
        assert!(wants_html(&request("text/html")));
        assert!(wants_html(&request("application/json, text/html")));
        assert!(wants_html(&request(
            "text/html,application/xhtml+xml,*/*;q=0.8"
        )));
    }
}
