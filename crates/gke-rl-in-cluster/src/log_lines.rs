//! A job's log cut into lines as it arrives, in time linear in its length and memory bounded
//! by one line: every byte is looked at once, and a line longer than [`MAX_LINE`] is kept to
//! its first [`MAX_LINE`] bytes. `\n`, `\r\n` and a lone `\r` (a progress bar such as tqdm's
//! drawing itself again) each end a line.
//!
//! ```
//! let mut lines = gke_rl_in_cluster::log_lines::LineBuffer::default();
//! let mut seen = Vec::new();
//! lines.feed("step 1\r\nloading  10%\rloading 100%\nstep", |line| seen.push(line.to_owned()));
//! lines.feed(" 2\n", |line| seen.push(line.to_owned()));
//! assert_eq!(seen, ["step 1", "loading  10%", "loading 100%", "step 2"]);
//! ```

/// The longest line kept whole; the rest of a longer one is dropped.
pub const MAX_LINE: usize = 64 * 1024;

/// The unfinished last line of the text fed so far.
#[derive(Debug, Default)]
pub struct LineBuffer {
    partial: String,
    /// The text so far ended in `\r`, so a `\n` next ends no further line.
    after_carriage_return: bool,
}

impl LineBuffer {
    /// Feeds a chunk of text and calls `line` with each line it completes, without its end.
    pub fn feed(&mut self, chunk: &str, mut line: impl FnMut(&str)) {
        if chunk.is_empty() {
            return;
        }
        let mut rest = chunk;
        if self.after_carriage_return && rest.starts_with('\n') {
            rest = &rest[1..];
        }
        self.after_carriage_return = false;
        while let Some(end) = rest.find(['\n', '\r']) {
            let (text, ending) = (&rest[..end], rest.as_bytes()[end]);
            if self.partial.is_empty() {
                line(clip(text));
            } else {
                self.keep(text);
                line(&self.partial);
                self.partial.clear();
            }
            rest = &rest[end + 1..];
            if ending == b'\r' {
                match rest.strip_prefix('\n') {
                    Some(after) => rest = after,
                    None => self.after_carriage_return = rest.is_empty(),
                }
            }
        }
        self.keep(rest);
    }

    /// Ends the text: calls `line` with its unfinished last line, if it has one.
    pub fn finish(&mut self, mut line: impl FnMut(&str)) {
        if !self.partial.is_empty() {
            line(&self.partial);
            self.partial.clear();
        }
        self.after_carriage_return = false;
    }

    /// Drops the unfinished last line: the text it was part of was cut there.
    pub fn drop_partial(&mut self) {
        self.partial.clear();
        self.after_carriage_return = false;
    }

    /// Every line of the text that came as `chunks`, its unfinished end included.
    pub fn lines<'a>(chunks: impl IntoIterator<Item = &'a str>) -> Vec<String> {
        let mut buffer = LineBuffer::default();
        let mut seen = Vec::new();
        for chunk in chunks {
            buffer.feed(chunk, |line| seen.push(line.to_owned()));
        }
        buffer.finish(|line| seen.push(line.to_owned()));
        seen
    }

    /// Adds `text` to the unfinished line, as far as [`MAX_LINE`] allows.
    fn keep(&mut self, text: &str) {
        let room = MAX_LINE.saturating_sub(self.partial.len());
        self.partial.push_str(clip(&text[..text.floor_char_boundary(room.min(text.len()))]));
    }
}

/// At most the first [`MAX_LINE`] bytes of `text`, cut at a character's boundary.
fn clip(text: &str) -> &str {
    &text[..text.floor_char_boundary(MAX_LINE)]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines_of(chunks: &[&str]) -> Vec<String> {
        LineBuffer::lines(chunks.iter().copied())
    }

    #[test]
    fn every_line_end_ends_one_line_wherever_the_chunks_split() {
        let text = "a\r\nb\rc\n\nd\r\re";
        let whole = lines_of(&[text]);
        assert_eq!(whole, ["a", "b", "c", "", "d", "", "e"]);
        for split in 1..text.len() {
            assert_eq!(lines_of(&[&text[..split], "", &text[split..]]), whole, "split at {split}, an empty chunk between");
        }
    }

    #[test]
    fn a_line_is_kept_to_its_first_max_line_bytes() {
        let long = "é".repeat(MAX_LINE);
        let lines = lines_of(&[&long, "x\nnext"]);
        assert_eq!(lines.len(), 2);
        assert!(lines[0].len() <= MAX_LINE && lines[0].len() > MAX_LINE - 2 && lines[0].chars().all(|c| c == 'é'));
        assert_eq!(lines[1], "next");
        let (head, tail) = long.split_at(long.len() / 2);
        assert_eq!(lines_of(&[head, tail, "\n"])[0], lines[0], "the same whether it came whole or in pieces");
    }
}
