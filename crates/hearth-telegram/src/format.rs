//! The model's Markdown as Telegram HTML: `**bold**`, `` `code` ``, fenced
//! code blocks, `[text](https://…)` links and `#` headings; everything else
//! escaped, so the output is always balanced, well-formed HTML. Telegram may
//! still refuse it, and then the channel sends the plain text instead.

/// `text` as HTML for `parse_mode = HTML`.
pub fn to_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    let mut code: Option<String> = None;
    for line in text.split('\n') {
        let trimmed = line.trim_start();
        if let Some(lang) = trimmed.strip_prefix("```") {
            match code.take() {
                Some(body) => {
                    out.push_str(&body);
                    out.push_str("</code></pre>\n");
                }
                None => {
                    let lang = lang.trim();
                    let mut open = String::from("<pre><code");
                    if !lang.is_empty()
                        && lang
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || c == '+' || c == '-')
                    {
                        open.push_str(&format!(" class=\"language-{lang}\""));
                    }
                    open.push('>');
                    out.push_str(&open);
                    code = Some(String::new());
                }
            }
            continue;
        }
        match code.as_mut() {
            Some(body) => {
                if !body.is_empty() {
                    body.push('\n');
                }
                body.push_str(&escape(line));
            }
            None => {
                if let Some(title) = heading(line) {
                    out.push_str("<b>");
                    out.push_str(&inline(title));
                    out.push_str("</b>");
                } else {
                    out.push_str(&inline(line));
                }
                out.push('\n');
            }
        }
    }
    if let Some(body) = code {
        out.push_str(&body);
        out.push_str("</code></pre>\n");
    }
    out.truncate(out.trim_end_matches('\n').len());
    out
}

fn heading(line: &str) -> Option<&str> {
    let rest = line.trim_start_matches('#');
    let level = line.len() - rest.len();
    ((1..=6).contains(&level) && rest.starts_with(' ')).then(|| rest.trim())
}

/// One line outside code blocks.
fn inline(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(c) = rest.chars().next() {
        if c == '`'
            && let Some(end) = rest[1..].find('`').filter(|&e| e > 0)
        {
            out.push_str("<code>");
            out.push_str(&escape(&rest[1..1 + end]));
            out.push_str("</code>");
            rest = &rest[end + 2..];
            continue;
        }
        if let Some(after) = rest.strip_prefix("**")
            && let Some(end) = after.find("**").filter(|&e| e > 0)
        {
            out.push_str("<b>");
            out.push_str(&inline(&after[..end]));
            out.push_str("</b>");
            rest = &after[end + 2..];
            continue;
        }
        if c == '['
            && let Some((label, url, used)) = link(rest)
        {
            out.push_str(&format!(
                "<a href=\"{}\">{}</a>",
                escape(url),
                escape(label)
            ));
            rest = &rest[used..];
            continue;
        }
        out.push_str(&escape(&rest[..c.len_utf8()]));
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// `[label](http…)` at the start of `s`: the label, the URL, bytes used.
fn link(s: &str) -> Option<(&str, &str, usize)> {
    let close = s.find("](")?;
    let label = &s[1..close];
    let url_start = close + 2;
    let url_len = s[url_start..].find(')')?;
    let url = &s[url_start..url_start + url_len];
    let ok = !label.is_empty()
        && !label.contains('[')
        && (url.starts_with("http://") || url.starts_with("https://"))
        && !url.contains(char::is_whitespace);
    ok.then_some((label, url, url_start + url_len + 1))
}

/// Escapes what HTML parse mode reserves (also `"`, for attributes).
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserved_characters_are_escaped() {
        assert_eq!(
            to_html("a < b && c > \"d\""),
            "a &lt; b &amp;&amp; c &gt; &quot;d&quot;"
        );
    }

    #[test]
    fn markdown_becomes_tags() {
        assert_eq!(to_html("**hi** `x<y`"), "<b>hi</b> <code>x&lt;y</code>");
        assert_eq!(to_html("# Title\nbody"), "<b>Title</b>\nbody");
        assert_eq!(
            to_html("see [docs](https://e.com/?a=1&b=2)"),
            "see <a href=\"https://e.com/?a=1&amp;b=2\">docs</a>"
        );
        assert_eq!(
            to_html("```rust\nlet a = 1 < 2;\n```\nok"),
            "<pre><code class=\"language-rust\">let a = 1 &lt; 2;</code></pre>\nok"
        );
    }

    #[test]
    fn unbalanced_markers_stay_literal_and_blocks_close() {
        assert_eq!(to_html("2 ** 3 and `x"), "2 ** 3 and `x");
        assert_eq!(to_html("[a](javascript:x)"), "[a](javascript:x)");
        assert_eq!(to_html("```\nopen"), "<pre><code>open</code></pre>");
    }
}
