//! An RSS (0.9x, 1.0, 2.0), Atom or JSON feed: department news, a course
//! blog, Moodle's own forum RSS, parsed by the `feed-rs` crate.
//!
//! Each entry becomes a news item: its guid or id identifies it, falling
//! back to the link and then the title. A feed's categories are tags, not
//! courses, so no course is set.

use chrono::{DateTime, Utc};
use feed_rs::model::{Link, Text};

use super::item::plain_text;
use super::{ItemKind, LmsError, LmsItem, LmsSource, http};
use crate::config::LmsSourceConfig;
use futures::future::BoxFuture;

pub struct Feed {
    config: LmsSourceConfig,
    http: reqwest::Client,
}

impl Feed {
    pub fn new(config: LmsSourceConfig, http: reqwest::Client) -> Self {
        Self { config, http }
    }

    async fn fetch(&self) -> Result<Vec<LmsItem>, LmsError> {
        let mut request = self.http.get(&self.config.url);
        if let Some(token) = &self.config.token {
            request = request.bearer_auth(token.expose());
        }
        let body = http::text(http::send(request).await?).await?;
        parse(&body, &self.config.name)
    }
}

impl LmsSource for Feed {
    fn name(&self) -> &str {
        &self.config.name
    }

    fn poll(&self, _now: DateTime<Utc>) -> BoxFuture<'_, Result<Vec<LmsItem>, LmsError>> {
        Box::pin(self.fetch())
    }
}

/// An entry without a guid or id: its alternate link, else its title, so
/// the id stays the same from poll to poll (feed-rs would hash them).
fn fallback_id(links: &[Link], title: &Option<Text>, _base: Option<&str>) -> String {
    links
        .iter()
        .find(|l| matches!(l.rel.as_deref(), None | Some("alternate")))
        .map(|l| l.href.clone())
        .or_else(|| title.as_ref().map(|t| t.content.trim().to_string()))
        .unwrap_or_default()
}

/// The entries of a feed.
pub fn parse(text: &str, source: &str) -> Result<Vec<LmsItem>, LmsError> {
    let trimmed = text.trim_start_matches('\u{feff}').trim_start();
    if trimmed.is_empty() {
        return Err(LmsError::Malformed("an empty document".into()));
    }
    let feed = feed_rs::parser::Builder::new()
        .id_generator(fallback_id)
        .build()
        .parse(trimmed.as_bytes())
        .map_err(|e| LmsError::Malformed(format!("not an RSS or Atom feed: {e}")))?;
    Ok(feed
        .entries
        .into_iter()
        .filter(|e| !e.id.is_empty())
        .map(|e| {
            let title = e
                .title
                .map(|t| t.content.split_whitespace().collect::<Vec<_>>().join(" "))
                .filter(|t| !t.is_empty());
            let mut item = LmsItem::new(
                source,
                e.id,
                ItemKind::News,
                title.unwrap_or_else(|| "(untitled)".into()),
            );
            item.url = e
                .links
                .iter()
                .find(|l| matches!(l.rel.as_deref(), None | Some("alternate")))
                .map(|l| l.href.clone());
            item.updated = e.updated.or(e.published);
            item.detail = e
                .summary
                .map(|s| s.content)
                .or_else(|| e.content.and_then(|c| c.body))
                .map(|b| plain_text(&b))
                .filter(|b| !b.is_empty());
            item
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rss_items() {
        let rss = r#"<?xml version="1.0"?><rss version="2.0"><channel><title>News</title>
            <item><title>Library closed &amp; moved</title><link>https://u.example/n/1</link>
            <guid isPermaLink="false">n-1</guid><pubDate>Mon, 03 Mar 2025 09:00:00 +0100</pubDate>
            <description><![CDATA[<p>The library&nbsp;moves.</p>]]></description></item>
            <item><title>No guid</title><link>https://u.example/n/2</link></item>
            </channel></rss>"#;
        let items = parse(rss, "news").unwrap();
        assert_eq!(items.len(), 2);
        assert_eq!(items[0].id, "n-1");
        assert_eq!(items[0].title, "Library closed & moved");
        assert_eq!(items[0].detail.as_deref(), Some("The library moves."));
        assert_eq!(
            items[0].updated.map(|d| d.to_rfc3339()),
            Some("2025-03-03T08:00:00+00:00".into())
        );
        assert_eq!(
            items[1].id, "https://u.example/n/2",
            "the link stands in for a guid"
        );
    }

    #[test]
    fn atom_entries() {
        let atom = r#"<feed xmlns="http://www.w3.org/2005/Atom"><title>t</title>
            <entry><id>urn:e1</id><title type="text">Exam room</title>
            <link rel="self" href="https://u.example/self"/><link href="https://u.example/e1"/>
            <published>2025-03-01T10:00:00Z</published><updated>2025-03-02T10:00:00Z</updated>
            <summary>Room 4</summary></entry></feed>"#;
        let items = parse(atom, "blog").unwrap();
        assert_eq!(items[0].id, "urn:e1");
        assert_eq!(items[0].url.as_deref(), Some("https://u.example/e1"));
        assert_eq!(
            items[0].updated.map(|d| d.to_rfc3339()),
            Some("2025-03-02T10:00:00+00:00".into())
        );
    }

    #[test]
    fn html_and_broken_xml_are_malformed() {
        assert!(matches!(
            parse("<html><body>Sign in</body></html>", "x"),
            Err(LmsError::Malformed(_))
        ));
        assert!(matches!(
            parse("<rss><channel><item><title>x</item></rss>", "x"),
            Err(LmsError::Malformed(_))
        ));
        assert!(matches!(parse("", "x"), Err(LmsError::Malformed(_))));
    }
}
