//! Acknowledgement reactions. Telegram accepts only its own set of reaction
//! emoji, so the pipeline's ✅ and ⚠️ are shown as the nearest allowed ones.

/// The emoji Telegram will accept in place of `emoji`.
pub fn telegram_reaction(emoji: &str) -> &str {
    match emoji.trim_end_matches('\u{fe0f}') {
        "✅" | "✔" | "☑" => "👌",
        "⚠" | "❗" | "❌" => "🤷",
        _ => emoji,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipeline_emoji_map_to_allowed_ones() {
        assert_eq!(telegram_reaction("✅"), "👌");
        assert_eq!(telegram_reaction("⚠️"), "🤷");
        assert_eq!(telegram_reaction("👀"), "👀");
    }
}
