//! Glob matching with Redis's `stringmatchlen` rules: `*`, `?`, `[abc]`, `[^a]`,
//! `[a-z]`, and `\x` escapes. Used by KEYS, SCAN MATCH and CONFIG GET.

/// Whether `s` matches `pattern`, byte-wise (`nocase` folds ASCII case).
pub fn glob_match(pattern: &[u8], s: &[u8], nocase: bool) -> bool {
    // Iterative with one backtrack point for the most recent `*`, which keeps the
    // worst case polynomial (Redis bounds its recursion for the same reason).
    let (mut p, mut i) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    let eq = |a: u8, b: u8| {
        if nocase {
            a.eq_ignore_ascii_case(&b)
        } else {
            a == b
        }
    };
    while i < s.len() {
        if p < pattern.len() {
            match pattern[p] {
                b'*' => {
                    while p < pattern.len() && pattern[p] == b'*' {
                        p += 1;
                    }
                    if p == pattern.len() {
                        return true;
                    }
                    star = Some((p, i));
                    continue;
                }
                b'?' => {
                    p += 1;
                    i += 1;
                    continue;
                }
                b'[' => {
                    if let Some((matched, next)) = class_match(pattern, p, s[i], nocase) {
                        if matched {
                            p = next;
                            i += 1;
                            continue;
                        }
                    }
                }
                b'\\' if p + 1 < pattern.len() => {
                    if eq(pattern[p + 1], s[i]) {
                        p += 2;
                        i += 1;
                        continue;
                    }
                }
                c => {
                    if eq(c, s[i]) {
                        p += 1;
                        i += 1;
                        continue;
                    }
                }
            }
        }
        match star {
            Some((sp, si)) => {
                p = sp;
                i = si + 1;
                star = Some((sp, si + 1));
            }
            None => return false,
        }
    }
    while p < pattern.len() && pattern[p] == b'*' {
        p += 1;
    }
    p == pattern.len()
}

/// Match one byte against the class starting at `pattern[p] == '['`. Returns
/// whether it matched and the index after the class. An unterminated class runs
/// to the end of the pattern, as in Redis.
fn class_match(pattern: &[u8], p: usize, c: u8, nocase: bool) -> Option<(bool, usize)> {
    let mut j = p + 1;
    let not = pattern.get(j) == Some(&b'^');
    if not {
        j += 1;
    }
    let fold = |x: u8| if nocase { x.to_ascii_lowercase() } else { x };
    let c = fold(c);
    let mut matched = false;
    loop {
        match pattern.get(j) {
            None => break,
            Some(b']') => {
                j += 1;
                break;
            }
            Some(b'\\') if j + 1 < pattern.len() => {
                if fold(pattern[j + 1]) == c {
                    matched = true;
                }
                j += 2;
            }
            Some(&lo) if pattern.get(j + 1) == Some(&b'-') && j + 2 < pattern.len() => {
                let hi = pattern[j + 2];
                let (a, b) = if lo <= hi { (lo, hi) } else { (hi, lo) };
                if (fold(a)..=fold(b)).contains(&c) {
                    matched = true;
                }
                j += 3;
            }
            Some(&x) => {
                if fold(x) == c {
                    matched = true;
                }
                j += 1;
            }
        }
    }
    Some((matched != not, j))
}

#[cfg(test)]
mod tests {
    use super::glob_match;

    #[test]
    fn redis_examples() {
        for (p, s, want) in [
            ("h?llo", "hello", true),
            ("h*llo", "heeeello", true),
            ("h[ae]llo", "hallo", true),
            ("h[ae]llo", "hillo", false),
            ("h[^e]llo", "hallo", true),
            ("h[^e]llo", "hello", false),
            ("h[a-b]llo", "hbllo", true),
            ("*", "", true),
            ("a*b*c", "aXXbYYc", true),
            ("a*b*c", "aXXbYY", false),
            ("h\\*llo", "h*llo", true),
            ("h\\*llo", "hello", false),
            ("key:*", "key:12", true),
        ] {
            assert_eq!(
                glob_match(p.as_bytes(), s.as_bytes(), false),
                want,
                "{p} vs {s}"
            );
        }
        assert!(glob_match(b"MAXMEM*", b"maxmemory", true));
    }
}
