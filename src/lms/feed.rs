//! An RSS 2.0 or Atom feed: department news, a course blog, Moodle's own
//! forum RSS.
//!
//! Each `<item>` (RSS) or `<entry>` (Atom) becomes a news item: its guid or
//! id identifies it, falling back to the link and then the title.

use chrono::{DateTime, Utc};
use quick_xml::events::{BytesStart, Event};

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

/// The fields of one entry as read.
#[derive(Default)]
struct Entry {
    id: Option<String>,
    title: Option<String>,
    link: Option<String>,
    date: Option<DateTime<Utc>>,
    body: Option<String>,
    category: Option<String>,
}

/// The entries of an RSS 2.0 or Atom document.
pub fn parse(text: &str, source: &str) -> Result<Vec<LmsItem>, LmsError> {
    let mut reader = quick_xml::Reader::from_str(text);
    reader.config_mut().trim_text(true);
    let mut root: Option<String> = None;
    let mut entry: Option<Entry> = None;
    let mut field: Option<String> = None; // the element whose text is read
    let mut items = Vec::new();
    loop {
        let event = reader.read_event().map_err(|e| {
            LmsError::Malformed(format!("bad XML at byte {}: {e}", reader.buffer_position()))
        })?;
        match event {
            Event::Start(e) => {
                let name = local(&e);
                if root.is_none() {
                    root = Some(name.clone());
                    if !matches!(name.as_str(), "rss" | "feed" | "RDF") {
                        return Err(LmsError::Malformed(format!(
                            "not an RSS or Atom feed (root element <{name}>)"
                        )));
                    }
                }
                if name == "item" || name == "entry" {
                    entry = Some(Entry::default());
                } else if let Some(en) = entry.as_mut() {
                    if name == "link" {
                        atom_link(&e, en);
                    }
                    field = Some(name);
                }
            }
            Event::Empty(e) => {
                if let Some(en) = entry.as_mut()
                    && local(&e) == "link"
                {
                    atom_link(&e, en);
                }
            }
            Event::Text(t) => {
                if let (Some(en), Some(f)) = (entry.as_mut(), field.as_deref()) {
                    let text = match t.unescape() {
                        Ok(s) => s.into_owned(),
                        // HTML entities such as &nbsp; are not XML's.
                        Err(_) => String::from_utf8_lossy(&t).into_owned(),
                    };
                    take(en, f, text);
                }
            }
            Event::CData(c) => {
                if let (Some(en), Some(f)) = (entry.as_mut(), field.as_deref()) {
                    take(en, f, String::from_utf8_lossy(&c.into_inner()).into_owned());
                }
            }
            Event::End(e) => {
                let name = String::from_utf8_lossy(e.local_name().as_ref()).into_owned();
                if name == "item" || name == "entry" {
                    if let Some(en) = entry.take() {
                        items.extend(item(en, source));
                    }
                } else {
                    field = None;
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    if root.is_none() {
        return Err(LmsError::Malformed("an empty document".into()));
    }
    Ok(items)
}

fn local(e: &BytesStart<'_>) -> String {
    String::from_utf8_lossy(e.local_name().as_ref()).into_owned()
}

/// Atom's `<link href="…" rel="alternate"/>`; other rels are ignored.
fn atom_link(e: &BytesStart<'_>, entry: &mut Entry) {
    let mut href = None;
    let mut rel = None;
    for a in e.attributes().flatten() {
        let value = a.unescape_value().map(|v| v.into_owned()).ok();
        match a.key.local_name().as_ref() {
            b"href" => href = value,
            b"rel" => rel = value,
            _ => {}
        }
    }
    if let Some(href) = href
        && matches!(rel.as_deref(), None | Some("alternate"))
        && entry.link.is_none()
    {
        entry.link = Some(href);
    }
}

fn take(entry: &mut Entry, field: &str, text: String) {
    let text = text.trim().to_string();
    if text.is_empty() {
        return;
    }
    match field {
        "guid" | "id" => entry.id = Some(text),
        "title" => entry.title = Some(text),
        "link" if entry.link.is_none() => entry.link = Some(text),
        "pubDate" | "updated" | "published" | "date" => {
            let parsed = DateTime::parse_from_rfc2822(&text)
                .or_else(|_| DateTime::parse_from_rfc3339(&text))
                .ok()
                .map(|d| d.with_timezone(&Utc));
            // Atom's `updated` wins over `published`.
            if parsed.is_some() && (entry.date.is_none() || field == "updated") {
                entry.date = parsed;
            }
        }
        "description" | "summary" | "content" | "encoded" if entry.body.is_none() => {
            entry.body = Some(plain_text(&text))
        }
        "category" if entry.category.is_none() => entry.category = Some(text),
        _ => {}
    }
}

fn item(entry: Entry, source: &str) -> Option<LmsItem> {
    let id = entry
        .id
        .clone()
        .or_else(|| entry.link.clone())
        .or_else(|| entry.title.clone())?;
    let mut item = LmsItem::new(
        source,
        id,
        ItemKind::News,
        entry.title.unwrap_or_else(|| "(untitled)".into()),
    );
    item.url = entry.link;
    item.updated = entry.date;
    item.detail = entry.body.filter(|b| !b.is_empty());
    item.course = entry.category;
    Some(item)
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
