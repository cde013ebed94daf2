-- The environment scripts run in, sealed as Redis 7.0 seals it: the globals, every
-- library table and the string metatable are read-only, raw access cannot get around
-- that, bytecode cannot be loaded, and nothing a script does reaches the next script.
--
-- Lua 5.1 has no read-only tables (Redis patches its Lua for them), so each guarded
-- table hides behind an empty proxy whose metatable refuses writes, and the functions
-- that bypass metatables (rawset, setmetatable, next, table.insert...) are wrapped to
-- see through proxies or refuse them. No path hands a script a guarded table itself.
--
-- Called once with Redis's error handler; returns the sealed globals (a script's
-- environment) and the real globals behind them.
local error_handler = ...

local error, type, tostring, select = error, type, tostring, select
local next, pairs, ipairs = next, pairs, ipairs
local rawget, rawset = rawget, rawset
local setmetatable, getmetatable, setfenv = setmetatable, getmetatable, setfenv
local real_loadstring, concat = loadstring, table.concat

local READONLY = 'Attempt to modify a readonly table'

local guarded = {} -- proxy -> the table it guards
local shown = {} -- proxy -> what getmetatable shows for it

-- Called as __newindex: level 2 is the code that assigned.
local function refuse()
  error(READONLY, 2)
end

local function seal(t, visible)
  local proxy = setmetatable({}, { __index = t, __newindex = refuse, __metatable = false })
  guarded[proxy] = t
  shown[proxy] = visible
  return proxy
end

local function unwrap(t)
  return guarded[t] or t
end

-- Wrapped functions raise where they are called from C, without a position, as
-- Redis's patched Lua does.
local function refuse_guarded(t)
  if guarded[t] then
    error(READONLY, 0)
  end
end

local function copy(t)
  local c = {}
  for k, v in next, t do
    c[k] = v
  end
  return c
end

local env = {}

local function globals_index(_, name)
  error("Script attempted to access nonexistent global variable '" .. tostring(name) .. "'", 2)
end
setmetatable(env, { __index = globals_index })
local sealed_env = seal(env, nil)
shown[sealed_env] = seal({ __index = globals_index }, nil)

-- Library tables, each a copy so that wrapping one function does not change the
-- interpreter's own tables.
local tables = {}
for _, name in ipairs({ 'string', 'math', 'table', 'coroutine', 'bit', 'cjson', 'cmsgpack', 'struct', 'redis' }) do
  tables[name] = copy(_G[name])
end

-- A wrapped function checks its table argument itself: the error must name the
-- script's line (level 2), not the wrapper's, as when Redis's C function raises it.
local function check_table(t, position, name, given)
  if type(t) ~= 'table' then
    local got = given and type(t) or 'no value'
    error('bad argument #' .. position .. " to '" .. name .. "' (table expected, got " .. got .. ')', 3)
  end
end

local table_lib = tables.table
local table_insert = table_lib.insert
table_lib.insert = function(...)
  local t = ...
  check_table(t, 1, 'insert', select('#', ...) > 0)
  refuse_guarded(t)
  return table_insert(...)
end
-- Guarded tables keep nothing in their array part: sorting or removing from them
-- writes nothing, and so, in Redis, raises nothing.
for _, name in ipairs({ 'remove', 'sort' }) do
  local original = table_lib[name]
  table_lib[name] = function(...)
    local t = ...
    check_table(t, 1, name, select('#', ...) > 0)
    if guarded[t] then
      return
    end
    return original(...)
  end
end
for _, name in ipairs({ 'concat', 'foreach', 'foreachi', 'getn', 'maxn' }) do
  local original = table_lib[name]
  table_lib[name] = function(t, ...)
    return original(unwrap(t), ...)
  end
end

for name, t in pairs(tables) do
  env[name] = seal(t, nil)
end

-- `string` methods ("x"):rep(3) go through the sealed string table.
local string_metatable = getmetatable('')
string_metatable.__index = env.string
string_metatable.__metatable = seal(string_metatable, nil)

local function sealed_next(t, k)
  return next(unwrap(t), k)
end

for _, name in ipairs({ 'assert', 'collectgarbage', 'error', 'gcinfo', 'rawequal',
  'select', 'tonumber', 'tostring', 'type', 'unpack', 'xpcall', '_VERSION' }) do
  env[name] = _G[name]
end

env.next = function(...)
  local t, k = ...
  check_table(t, 1, 'next', select('#', ...) > 0)
  return next(unwrap(t), k)
end
env.rawget = function(...)
  local t, k = ...
  check_table(t, 1, 'rawget', select('#', ...) > 0)
  return rawget(unwrap(t), k)
end
env.rawset = function(...)
  local t, k, v = ...
  check_table(t, 1, 'rawset', select('#', ...) > 0)
  refuse_guarded(t)
  return rawset(t, k, v)
end
env.setmetatable = function(...)
  local t, mt = ...
  check_table(t, 1, 'setmetatable', select('#', ...) > 0)
  refuse_guarded(t)
  return setmetatable(t, mt)
end
env.getmetatable = function(...)
  local v = ...
  if select('#', ...) == 0 then
    error("bad argument #1 to 'getmetatable' (value expected)", 2)
  end
  if guarded[v] then
    return shown[v]
  end
  return getmetatable(v)
end
env.pairs = function(...)
  local t = ...
  check_table(t, 1, 'pairs', select('#', ...) > 0)
  if guarded[t] then
    return sealed_next, t, nil
  end
  return next, t, nil
end
env.ipairs = function(...)
  local t = ...
  check_table(t, 1, 'ipairs', select('#', ...) > 0)
  local g = guarded[t]
  if g then
    return function(_, i)
      i = i + 1
      local v = rawget(g, i)
      if v ~= nil then
        return i, v
      end
    end, t, 0
  end
  return ipairs(t)
end

-- Redis 7.0's pcall hands a script the text of Redis's error table, not the table.
local real_pcall = pcall
local function caught(ok, ...)
  if ok then
    return true, ...
  end
  local e = ...
  if type(e) == 'table' then
    local text = e.err
    if type(text) == 'string' or type(text) == 'number' then
      e = text
    end
  end
  return false, e
end
env.pcall = function(...)
  return caught(real_pcall(...))
end

-- luaO_chunkid: how Lua names a chunk in its messages.
local function chunkid(source)
  source = source:match('^[^%z]*')
  local first = source:sub(1, 1)
  if first == '=' or first == '@' then
    return source:sub(2, 60)
  end
  local line = source:match('^[^\r\n]*')
  if #line > 43 then
    line = line:sub(1, 43)
  end
  if #line < #source then
    return '[string "' .. line .. '..."]'
  end
  return '[string "' .. source .. '"]'
end

-- Bytecode is refused as Redis refuses it: its parser reads the dump as text.
env.loadstring = function(s, chunkname)
  if type(s) == 'string' and s:byte(1) == 27 then
    return nil, chunkid(chunkname or s) .. ":1: unexpected symbol near 'char(27)'"
  end
  local f, message = real_loadstring(s, chunkname)
  if f then
    setfenv(f, sealed_env)
  end
  return f, message
end
env.load = function(reader, chunkname)
  local pieces = {}
  while true do
    local piece = reader()
    if piece == nil or piece == '' then
      break
    end
    if type(piece) ~= 'string' then
      return nil, 'reader function must return a string'
    end
    pieces[#pieces + 1] = piece
  end
  return env.loadstring(concat(pieces), chunkname or '=(load)')
end

env.__redis__err__handler = error_handler
env._G = sealed_env

return sealed_env, env
