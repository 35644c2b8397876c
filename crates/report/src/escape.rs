//! Text made safe for HTML: every page and chart sojourn writes puts labels, titles and notes
//! through [`escape`]. Its own module so that the page, its sections and its charts share it
//! without depending on one another.

/// Escapes text for HTML element content and attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The five characters that can end an element or an attribute come out as entities;
    /// everything else, other scripts included, as given.
    #[test]
    fn markup_characters_become_entities() {
        assert_eq!(
            escape(r#"<a href="x" title='y'>&amp;</a> café"#),
            "&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;amp;&lt;/a&gt; café"
        );
    }
}
