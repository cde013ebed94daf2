//! `bit`: LuaBitOp 1.0.2. Numbers are reduced to 32-bit integers the way it reduces
//! them (adding 2^52 + 2^51 and taking the low word), and results are signed.

use mlua::{Lua, Table, Value as LuaValue, Variadic};

use super::check_number;

/// LuaBitOp's `barg`: `n` modulo 2^32, rounded to nearest.
fn to_bits(n: f64) -> u32 {
    (n + 6_755_399_441_055_744.0).to_bits() as u32
}

fn arg(lua: &Lua, args: &[LuaValue], position: usize, name: &str) -> mlua::Result<u32> {
    Ok(to_bits(check_number(lua, args, position, name)?))
}

fn result(bits: u32) -> f64 {
    f64::from(bits as i32)
}

pub(crate) fn table(lua: &Lua) -> mlua::Result<Table> {
    let bit = lua.create_table()?;
    let unary = |name: &'static str, op: fn(u32) -> u32| {
        lua.create_function(move |lua, args: Variadic<LuaValue>| {
            Ok(result(op(arg(lua, &args, 1, name)?)))
        })
    };
    bit.raw_set("tobit", unary("tobit", |x| x)?)?;
    bit.raw_set("bnot", unary("bnot", |x| !x)?)?;
    bit.raw_set("bswap", unary("bswap", u32::swap_bytes)?)?;
    let fold = |name: &'static str, op: fn(u32, u32) -> u32| {
        lua.create_function(move |lua, args: Variadic<LuaValue>| {
            let mut acc = arg(lua, &args, 1, name)?;
            for position in 2..=args.len() {
                acc = op(acc, arg(lua, &args, position, name)?);
            }
            Ok(result(acc))
        })
    };
    bit.raw_set("band", fold("band", |a, b| a & b)?)?;
    bit.raw_set("bor", fold("bor", |a, b| a | b)?)?;
    bit.raw_set("bxor", fold("bxor", |a, b| a ^ b)?)?;
    let shift = |name: &'static str, op: fn(u32, u32) -> u32| {
        lua.create_function(move |lua, args: Variadic<LuaValue>| {
            let x = arg(lua, &args, 1, name)?;
            let n = arg(lua, &args, 2, name)? & 31;
            Ok(result(op(x, n)))
        })
    };
    bit.raw_set("lshift", shift("lshift", |x, n| x << n)?)?;
    bit.raw_set("rshift", shift("rshift", |x, n| x >> n)?)?;
    bit.raw_set(
        "arshift",
        shift("arshift", |x, n| ((x as i32) >> n) as u32)?,
    )?;
    bit.raw_set("rol", shift("rol", u32::rotate_left)?)?;
    bit.raw_set("ror", shift("ror", u32::rotate_right)?)?;
    bit.raw_set(
        "tohex",
        lua.create_function(|lua, args: Variadic<LuaValue>| {
            let mut x = arg(lua, &args, 1, "tohex")?;
            let mut n = match args.get(1) {
                None | Some(mlua::Value::Nil) => 8,
                Some(_) => arg(lua, &args, 2, "tohex")? as i32,
            };
            // 1.0.2's fix: -INT_MIN would overflow.
            if n == i32::MIN {
                n = i32::MIN + 1;
            }
            let digits: &[u8] = if n < 0 {
                n = -n;
                b"0123456789ABCDEF"
            } else {
                b"0123456789abcdef"
            };
            let n = n.min(8) as usize;
            let mut text = vec![b'0'; n];
            for slot in text.iter_mut().rev() {
                *slot = digits[(x & 15) as usize];
                x >>= 4;
            }
            lua.create_string(text)
        })?,
    )?;
    Ok(bit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_reduce_like_luabitop() {
        assert_eq!(to_bits(1.0), 1);
        assert_eq!(to_bits(-1.0) as i32, -1);
        assert_eq!(to_bits(4_294_967_296.0 + 5.0), 5);
        assert_eq!(to_bits(2.5), 2, "rounds half to even");
        assert_eq!(to_bits(3.5), 4);
    }
}
