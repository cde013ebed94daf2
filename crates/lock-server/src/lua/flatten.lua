-- Flattens a script's return value (a table) into two lists Rust reads one entry at a
-- time: kinds[i] says what out[i] is. Holding every nested table from Rust at once
-- would run out of references on deep returns (a table that contains itself); Lua
-- walks them with a stack of its own. Depth first, each aggregate before its
-- elements, with the tests Redis 7.0 applies in its order: err, ok, double,
-- big_number, map, set, then an array that stops at its first nil.
--   v: a scalar in out[i]        e/o: error/status text     d: double   g: big number
--   a/s: array/set of out[i] elements     m: map of out[i] key-value pairs
local MAX_NESTING = 7995
local rawget, type, next = rawget, type, next

return function(value)
  local kinds, out, n = {}, {}, 0
  local pending, depths, top = { value }, { 0 }, 1
  local function push(item, depth)
    top = top + 1
    pending[top], depths[top] = item, depth
  end
  while top > 0 do
    local v, depth = pending[top], depths[top]
    pending[top], depths[top] = nil, nil
    top = top - 1
    n = n + 1
    if type(v) ~= 'table' then
      kinds[n], out[n] = 'v', v
    elseif depth >= MAX_NESTING then
      -- Redis runs out of Lua stack here and answers an error in the table's place.
      kinds[n], out[n] = 'e', 'ERR reached lua stack limit'
    else
      local err, ok, double = rawget(v, 'err'), rawget(v, 'ok'), rawget(v, 'double')
      local big, map, set = rawget(v, 'big_number'), rawget(v, 'map'), rawget(v, 'set')
      if type(err) == 'string' then
        kinds[n], out[n] = 'e', err
      elseif type(ok) == 'string' then
        kinds[n], out[n] = 'o', ok
      elseif type(double) == 'number' then
        kinds[n], out[n] = 'd', double
      elseif type(big) == 'string' then
        kinds[n], out[n] = 'g', big
      else
        local items = {}
        if type(map) == 'table' then
          for key, item in next, map do
            items[#items + 1] = key
            items[#items + 1] = item
          end
          kinds[n], out[n] = 'm', #items / 2
        elseif type(set) == 'table' then
          for key in next, set do
            items[#items + 1] = key
          end
          kinds[n], out[n] = 's', #items
        else
          local count = 0
          while rawget(v, count + 1) ~= nil do
            count = count + 1
            items[count] = rawget(v, count)
          end
          kinds[n], out[n] = 'a', count
        end
        for i = #items, 1, -1 do
          push(items[i], depth + 1)
        end
      end
    end
  end
  return kinds, out, n
end
