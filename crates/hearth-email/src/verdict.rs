//! Whether a mail is from whom its `From:` says. Anyone can write any
//! `From:`; what a forger cannot write is the verdict the receiving server
//! puts on top of the mail (`Authentication-Results`, RFC 8601) or the
//! sender's secret address.
//!
//! Only the topmost `Authentication-Results` counts, and only when its
//! authserv-id is the configured one: the receiving server adds its own
//! above everything the sender wrote (and removes copies of it, RFC 8601
//! §5), so a verdict forged into the mail sits below it. A `pass` counts
//! only when it is for the `From:` domain (DKIM's `header.d`, SPF's
//! `smtp.mailfrom`), so a forger's own passing domain does not vouch for
//! another.

use std::collections::BTreeMap;

use hearth_core::secret::Secret;

/// Why a sender was believed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proof {
    /// The receiving server's DKIM verdict for the `From:` domain.
    Dkim,
    /// The receiving server's SPF verdict for the `From:` domain.
    Spf,
    /// The mail came to the sender's secret address.
    Token,
}

/// What of a mail the check reads.
pub struct Evidence<'a> {
    /// `From:`, lowercased.
    pub from: &'a str,
    /// Raw `Authentication-Results` values, topmost first.
    pub results: &'a [String],
    /// Every address the mail was sent to (`To:`, `Cc:`, `Delivered-To:`,
    /// `X-Original-To:`), lowercased.
    pub recipients: &'a [String],
}

/// The proof that `evidence.from` wrote the mail, if there is one.
pub fn proof(
    evidence: &Evidence<'_>,
    authserv_id: Option<&str>,
    bot_address: &str,
    tokens: &BTreeMap<String, Secret>,
) -> Option<Proof> {
    if let Some(token) = tokens.get(evidence.from) {
        let secret = secret_address(bot_address, token.expose());
        if evidence.recipients.iter().any(|r| r == &secret) {
            return Some(Proof::Token);
        }
    }
    let domain = evidence.from.rsplit_once('@')?.1;
    let top = evidence.results.first()?;
    server_verdict(top, authserv_id?, domain)
}

/// `name+token@domain` for the bot's `name@domain`.
pub fn secret_address(bot_address: &str, token: &str) -> String {
    match bot_address.split_once('@') {
        Some((name, domain)) => format!("{name}+{}@{domain}", token.to_ascii_lowercase()),
        None => bot_address.to_string(),
    }
}

/// A passing DKIM or SPF result for `domain` in one header value from
/// `authserv_id`.
fn server_verdict(value: &str, authserv_id: &str, domain: &str) -> Option<Proof> {
    let value = without_comments(value);
    let mut parts = value.split(';');
    let id = parts.next()?.split_whitespace().next()?;
    if !id.eq_ignore_ascii_case(authserv_id) {
        return None;
    }
    for result in parts {
        let mut words = result.split_whitespace();
        let Some((method, outcome)) = words.next().and_then(|w| w.split_once('=')) else {
            continue;
        };
        if !outcome.eq_ignore_ascii_case("pass") {
            continue;
        }
        let props: Vec<(&str, &str)> = words.filter_map(|w| w.split_once('=')).collect();
        let for_domain = |key: &str| {
            props.iter().any(|(k, v)| {
                k.eq_ignore_ascii_case(key) && {
                    let d = v.rsplit('@').next().unwrap_or(v);
                    d.eq_ignore_ascii_case(domain)
                }
            })
        };
        match method.to_ascii_lowercase().as_str() {
            "dkim" if for_domain("header.d") || for_domain("header.i") => return Some(Proof::Dkim),
            "spf" if for_domain("smtp.mailfrom") => return Some(Proof::Spf),
            _ => {}
        }
    }
    None
}

/// `value` with its parenthesised comments taken out.
fn without_comments(value: &str) -> String {
    let mut depth = 0usize;
    value
        .chars()
        .filter(|&c| match c {
            '(' => {
                depth += 1;
                false
            }
            ')' => {
                depth = depth.saturating_sub(1);
                false
            }
            _ => depth == 0,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(from: &str, results: &[&str], recipients: &[&str]) -> Option<Proof> {
        let results: Vec<String> = results.iter().map(|s| s.to_string()).collect();
        let recipients: Vec<String> = recipients.iter().map(|s| s.to_string()).collect();
        let mut tokens = BTreeMap::new();
        tokens.insert(
            "ann@home.test".to_string(),
            Secret::new("Tok3nTok3nXY".to_string()),
        );
        let e = Evidence {
            from,
            results: &results,
            recipients: &recipients,
        };
        proof(&e, Some("mx.home.test"), "bot@home.test", &tokens)
    }

    #[test]
    fn only_the_receiving_servers_topmost_verdict_for_the_from_domain_counts() {
        let good =
            "mx.home.test; dkim=pass (good signature) header.d=home.test header.s=s1; spf=fail";
        assert_eq!(check("ann@home.test", &[good], &[]), Some(Proof::Dkim));
        let spf = "mx.home.test 1; spf=pass smtp.mailfrom=ann@home.test";
        assert_eq!(check("ann@home.test", &[spf], &[]), Some(Proof::Spf));
        // A forger's verdict below the server's own does not count.
        let none = "mx.home.test; dkim=none; spf=softfail smtp.mailfrom=ann@home.test";
        assert_eq!(check("ann@home.test", &[none, good], &[]), None);
        // Another server's verdict, or a pass for the forger's own domain.
        let other = "mx.evil.test; dkim=pass header.d=home.test";
        assert_eq!(check("ann@home.test", &[other], &[]), None);
        let theirs =
            "mx.home.test; dkim=pass header.d=evil.test; spf=pass smtp.mailfrom=x@evil.test";
        assert_eq!(check("ann@home.test", &[theirs], &[]), None);
        // A commented-out pass is no pass.
        let commented = "mx.home.test; dkim=fail (dkim=pass header.d=home.test) header.d=home.test";
        assert_eq!(check("ann@home.test", &[commented], &[]), None);
        assert_eq!(check("ann@home.test", &[], &[]), None);
    }

    #[test]
    fn the_secret_address_counts_only_for_its_own_sender() {
        let secret = secret_address("bot@home.test", "Tok3nTok3nXY");
        assert_eq!(secret, "bot+tok3ntok3nxy@home.test");
        assert_eq!(check("ann@home.test", &[], &[&secret]), Some(Proof::Token));
        assert_eq!(check("bob@home.test", &[], &[&secret]), None);
        assert_eq!(check("ann@home.test", &[], &["bot+guess@home.test"]), None);
    }
}
