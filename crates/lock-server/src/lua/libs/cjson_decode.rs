//! `cjson.decode`, as lua-cjson 2.1.0 reads JSON: token by token, numbers by `strtod`
//! (so `01`, `0x10` and `inf` are numbers), control characters allowed in strings,
//! `null` as `cjson.null`, and its error messages (`Expected value but found T_END at
//! character 1`).

use mlua::{Lua, Table, Value as LuaValue};

use super::cjson::{Config, null};
use super::{lib_error, with_stack};

#[derive(Debug)]
enum Token {
    ObjectBegin,
    ObjectEnd,
    ArrayBegin,
    ArrayEnd,
    String(Vec<u8>),
    Number(f64),
    Boolean(bool),
    Null,
    Colon,
    Comma,
    End,
    /// A token that could not be read, with why.
    Error(&'static str),
}

impl Token {
    /// How an error message names what was found.
    fn found(&self) -> &'static str {
        match self {
            Token::ObjectBegin => "T_OBJ_BEGIN",
            Token::ObjectEnd => "T_OBJ_END",
            Token::ArrayBegin => "T_ARR_BEGIN",
            Token::ArrayEnd => "T_ARR_END",
            Token::String(_) => "T_STRING",
            Token::Number(_) => "T_NUMBER",
            Token::Boolean(_) => "T_BOOLEAN",
            Token::Null => "T_NULL",
            Token::Colon => "T_COLON",
            Token::Comma => "T_COMMA",
            Token::End => "T_END",
            Token::Error(why) => why,
        }
    }
}

struct Parser<'a> {
    lua: &'a Lua,
    data: &'a [u8],
    at: usize,
    depth: i64,
    config: &'a Config,
}

/// The Lua value `text` encodes.
pub(crate) fn decode(lua: &Lua, text: &[u8], config: &Config) -> mlua::Result<LuaValue> {
    if text.len() >= 2 && (text[0] == 0 || text[1] == 0) {
        return Err(lib_error(
            lua,
            "JSON parser does not support UTF-16 or UTF-32",
        ));
    }
    // lua-cjson reads a C string: a NUL ends the text.
    let end = memchr::memchr(0, text).unwrap_or(text.len());
    let mut parser = Parser {
        lua,
        data: &text[..end],
        at: 0,
        depth: 0,
        config,
    };
    let (token, index) = parser.next_token();
    let value = parser.value(token, index)?;
    let (token, index) = parser.next_token();
    if !matches!(token, Token::End) {
        return Err(parser.expected("the end", &token, index));
    }
    Ok(value)
}

impl Parser<'_> {
    fn expected(&self, what: &str, token: &Token, index: usize) -> mlua::Error {
        lib_error(
            self.lua,
            format!(
                "Expected {what} but found {} at character {}",
                token.found(),
                index + 1
            ),
        )
    }

    fn peek(&self, offset: usize) -> u8 {
        self.data.get(self.at + offset).copied().unwrap_or(0)
    }

    /// The next token and where it starts (for errors inside a string, where the error
    /// is).
    fn next_token(&mut self) -> (Token, usize) {
        while matches!(self.peek(0), b' ' | b'\t' | b'\n' | b'\r') {
            self.at += 1;
        }
        let start = self.at;
        let single = match self.peek(0) {
            0 if self.at >= self.data.len() => Some(Token::End),
            b'{' => Some(Token::ObjectBegin),
            b'}' => Some(Token::ObjectEnd),
            b'[' => Some(Token::ArrayBegin),
            b']' => Some(Token::ArrayEnd),
            b':' => Some(Token::Colon),
            b',' => Some(Token::Comma),
            _ => None,
        };
        if let Some(token) = single {
            if !matches!(token, Token::End) {
                self.at += 1;
            }
            return (token, start);
        }
        let rest = &self.data[self.at..];
        let first = rest[0];
        if first == b'"' {
            return self.string();
        }
        if first == b'-' || first.is_ascii_digit() {
            if !self.config.decode_invalid_numbers && invalid_number(rest) {
                return (Token::Error("invalid number"), start);
            }
            return self.number();
        }
        for (word, token) in [
            (&b"true"[..], Token::Boolean(true)),
            (b"false", Token::Boolean(false)),
            (b"null", Token::Null),
        ] {
            if rest.starts_with(word) {
                self.at += word.len();
                return (token, start);
            }
        }
        if self.config.decode_invalid_numbers && invalid_number(rest) {
            return self.number();
        }
        (Token::Error("invalid token"), start)
    }

    fn number(&mut self) -> (Token, usize) {
        let start = self.at;
        match strtod(&self.data[self.at..]) {
            Some((value, used)) => {
                self.at += used;
                (Token::Number(value), start)
            }
            None => (Token::Error("invalid number"), start),
        }
    }

    fn string(&mut self) -> (Token, usize) {
        let start = self.at;
        self.at += 1;
        let mut text = Vec::new();
        loop {
            let byte = self.peek(0);
            if self.at >= self.data.len() {
                return (Token::Error("unexpected end of string"), self.at);
            }
            match byte {
                b'"' => break,
                b'\\' => {
                    let escaped = match self.peek(1) {
                        b'"' => b'"',
                        b'\\' => b'\\',
                        b'/' => b'/',
                        b'b' => 8,
                        b'f' => 12,
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'u' => match self.unicode_escape() {
                            Some((c, used)) => {
                                let mut buffer = [0u8; 4];
                                text.extend_from_slice(c.encode_utf8(&mut buffer).as_bytes());
                                self.at += used;
                                continue;
                            }
                            None => {
                                return (Token::Error("invalid unicode escape code"), self.at);
                            }
                        },
                        _ => return (Token::Error("invalid escape code"), self.at),
                    };
                    text.push(escaped);
                    self.at += 2;
                }
                other => {
                    text.push(other);
                    self.at += 1;
                }
            }
        }
        self.at += 1;
        (Token::String(text), start)
    }

    /// `\uXXXX` (a surrogate pair takes two): the character and the bytes read.
    fn unicode_escape(&self) -> Option<(char, usize)> {
        let hex = |offset: usize| -> Option<u32> {
            let digits = self.data.get(self.at + offset..self.at + offset + 4)?;
            u32::from_str_radix(std::str::from_utf8(digits).ok()?, 16).ok()
        };
        let high = hex(2)?;
        if (0xdc00..0xe000).contains(&high) {
            return None;
        }
        if (0xd800..0xdc00).contains(&high) {
            if self.data.get(self.at + 6..self.at + 8)? != b"\\u" {
                return None;
            }
            let low = hex(8)?;
            if !(0xdc00..0xe000).contains(&low) {
                return None;
            }
            let code = 0x10000 + ((high & 0x3ff) << 10) + (low & 0x3ff);
            return Some((char::from_u32(code)?, 12));
        }
        Some((char::from_u32(high)?, 6))
    }

    fn descend(&mut self, index: usize) -> mlua::Result<()> {
        self.depth += 1;
        if self.depth > self.config.decode_max_depth {
            return Err(lib_error(
                self.lua,
                format!(
                    "Found too many nested data structures ({}) at character {}",
                    self.depth,
                    index + 1
                ),
            ));
        }
        Ok(())
    }

    fn value(&mut self, token: Token, index: usize) -> mlua::Result<LuaValue> {
        with_stack(|| self.value_here(token, index))
    }

    fn value_here(&mut self, token: Token, index: usize) -> mlua::Result<LuaValue> {
        Ok(match token {
            Token::String(text) => LuaValue::String(self.lua.create_string(text)?),
            Token::Number(n) => LuaValue::Number(n),
            Token::Boolean(b) => LuaValue::Boolean(b),
            Token::Null => null(),
            Token::ObjectBegin => LuaValue::Table(self.object(index)?),
            Token::ArrayBegin => LuaValue::Table(self.array(index)?),
            other => return Err(self.expected("value", &other, index)),
        })
    }

    fn object(&mut self, index: usize) -> mlua::Result<Table> {
        self.descend(index)?;
        let table = self.lua.create_table()?;
        let (mut token, mut index) = self.next_token();
        if matches!(token, Token::ObjectEnd) {
            self.depth -= 1;
            return Ok(table);
        }
        loop {
            let Token::String(key) = token else {
                return Err(self.expected("object key string", &token, index));
            };
            let (colon, at) = self.next_token();
            if !matches!(colon, Token::Colon) {
                return Err(self.expected("colon", &colon, at));
            }
            let (value, at) = self.next_token();
            let value = self.value(value, at)?;
            table.raw_set(self.lua.create_string(key)?, value)?;
            let (next, at) = self.next_token();
            match next {
                Token::ObjectEnd => break,
                Token::Comma => (token, index) = self.next_token(),
                other => return Err(self.expected("comma or object end", &other, at)),
            }
        }
        self.depth -= 1;
        Ok(table)
    }

    fn array(&mut self, index: usize) -> mlua::Result<Table> {
        self.descend(index)?;
        let table = self.lua.create_table()?;
        let (mut token, mut index) = self.next_token();
        if matches!(token, Token::ArrayEnd) {
            self.depth -= 1;
            return Ok(table);
        }
        for i in 1.. {
            let value = self.value(token, index)?;
            table.raw_set(i, value)?;
            let (next, at) = self.next_token();
            match next {
                Token::ArrayEnd => break,
                Token::Comma => (token, index) = self.next_token(),
                other => return Err(self.expected("comma or array end", &other, at)),
            }
        }
        self.depth -= 1;
        Ok(table)
    }
}

/// lua-cjson's `json_is_invalid_number`: hex, a leading zero, or `inf`/`nan`.
fn invalid_number(text: &[u8]) -> bool {
    match text {
        [b'0', next, ..] => (next | 0x20) == b'x' || next.is_ascii_digit(),
        [b'0'] => false,
        [first, ..] if *first <= b'9' => false,
        _ => {
            let lower = text.get(..3).map(<[u8]>::to_ascii_lowercase);
            matches!(lower.as_deref(), Some(b"inf" | b"nan"))
        }
    }
}

/// C's `strtod` on the start of `text`: the number and how many bytes it took, `None`
/// when no number starts there.
pub(crate) fn strtod(text: &[u8]) -> Option<(f64, usize)> {
    let mut at = 0;
    let negative = match text.first() {
        Some(b'-') => {
            at += 1;
            true
        }
        Some(b'+') => {
            at += 1;
            false
        }
        _ => false,
    };
    let sign = if negative { -1.0 } else { 1.0 };
    let rest = &text[at..];
    let lower: Vec<u8> = rest.iter().take(8).map(u8::to_ascii_lowercase).collect();
    if lower.starts_with(b"infinity") {
        return Some((sign * f64::INFINITY, at + 8));
    }
    if lower.starts_with(b"inf") {
        return Some((sign * f64::INFINITY, at + 3));
    }
    if lower.starts_with(b"nan") {
        let mut used = at + 3;
        if text.get(used) == Some(&b'(')
            && let Some(close) = text[used..].iter().position(|b| *b == b')')
            && text[used + 1..used + close]
                .iter()
                .all(|b| b.is_ascii_alphanumeric() || *b == b'_')
        {
            used += close + 1;
        }
        return Some((sign * f64::NAN, used));
    }
    if lower.starts_with(b"0x")
        && rest
            .get(2)
            .is_some_and(|b| b.is_ascii_hexdigit() || *b == b'.')
        && let Some((value, used)) = hex_float(&rest[2..])
    {
        return Some((sign * value, at + 2 + used));
    }
    let digits = |from: usize| {
        rest[from..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count()
    };
    let mut end = digits(0);
    let mut mantissa_digits = end;
    if rest.get(end) == Some(&b'.') {
        let fraction = digits(end + 1);
        mantissa_digits += fraction;
        end += 1 + fraction;
    }
    if mantissa_digits == 0 {
        return None;
    }
    if matches!(rest.get(end), Some(b'e' | b'E')) {
        let mut exponent = end + 1;
        if matches!(rest.get(exponent), Some(b'+' | b'-')) {
            exponent += 1;
        }
        let exponent_digits = digits(exponent);
        if exponent_digits > 0 {
            end = exponent + exponent_digits;
        }
    }
    let literal = std::str::from_utf8(&rest[..end]).ok()?;
    // Rust's parser wants a digit before the point; strtod does not.
    let value: f64 = if literal.starts_with('.') {
        format!("0{literal}").parse().ok()?
    } else {
        literal.parse().ok()?
    };
    Some((sign * value, at + end))
}

/// The digits after `0x` of a hexadecimal float (`1f`, `1.8p3`).
fn hex_float(text: &[u8]) -> Option<(f64, usize)> {
    let mut value = 0.0f64;
    let mut at = 0;
    let mut any = false;
    while let Some(digit) = text.get(at).and_then(|b| (*b as char).to_digit(16)) {
        value = value * 16.0 + f64::from(digit);
        at += 1;
        any = true;
    }
    if text.get(at) == Some(&b'.') {
        at += 1;
        let mut scale = 1.0 / 16.0;
        while let Some(digit) = text.get(at).and_then(|b| (*b as char).to_digit(16)) {
            value += f64::from(digit) * scale;
            scale /= 16.0;
            at += 1;
            any = true;
        }
    }
    if !any {
        return None;
    }
    if matches!(text.get(at), Some(b'p' | b'P')) {
        let mut exponent_at = at + 1;
        let negative = match text.get(exponent_at) {
            Some(b'-') => {
                exponent_at += 1;
                true
            }
            Some(b'+') => {
                exponent_at += 1;
                false
            }
            _ => false,
        };
        let count = text[exponent_at..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        if count > 0 {
            let exponent: i32 = std::str::from_utf8(&text[exponent_at..exponent_at + count])
                .ok()?
                .parse()
                .unwrap_or(i32::MAX);
            value *= 2f64.powi(if negative { -exponent } else { exponent });
            at = exponent_at + count;
        }
    }
    Some((value, at))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_read_like_strtod() {
        assert_eq!(strtod(b"01"), Some((1.0, 2)));
        assert_eq!(strtod(b"0x10,"), Some((16.0, 4)));
        assert_eq!(strtod(b"-5e3]"), Some((-5000.0, 4)));
        assert_eq!(strtod(b"1e"), Some((1.0, 1)));
        assert_eq!(strtod(b"0.3e-3"), Some((0.0003, 6)));
        assert_eq!(strtod(b"-"), None);
        assert_eq!(strtod(b"1e999").map(|(x, _)| x), Some(f64::INFINITY));
        assert!(strtod(b"nan").is_some_and(|(x, n)| x.is_nan() && n == 3));
    }
}
