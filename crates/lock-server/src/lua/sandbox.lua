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

-- Redis 7 functions. A library's code runs once, at FUNCTION LOAD, where its only
-- global is `redis` with register_function, log and the version (Redis's load-time
-- API); its functions run later with every global a script has but KEYS and ARGV,
-- which they are given as arguments.
local registered = nil -- while a library loads: what it registered, in order

local function missing(name, level)
  error("Script attempted to access nonexistent global variable '" .. tostring(name) .. "'", level)
end

-- luaPushError's table: the message with Redis's default code.
local function fail(text)
  error({ err = 'ERR ' .. text })
end

-- lua_isstring: numbers are strings too.
local function stringlike(v)
  return type(v) == 'string' or type(v) == 'number'
end

local FLAGS = { 'no-writes', 'allow-oom', 'allow-stale', 'no-cluster', 'allow-cross-slot-keys' }

-- The flags of `t` (read as lua_gettable reads them, up to the first nil), by name; nil
-- if one is not a flag Redis knows.
local function read_flags(t)
  local flags = {}
  local j = 1
  while true do
    local v = t[j]
    if v == nil then
      return flags
    end
    if not stringlike(v) then
      return nil
    end
    local given = string.lower(tostring(v))
    local known = false
    for _, flag in ipairs(FLAGS) do
      if flag == given then
        flags[flag] = true
        known = true
      end
    end
    if not known then
      return nil
    end
    j = j + 1
  end
end

local function named_arguments(t)
  if type(t) ~= 'table' then
    fail('calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).')
  end
  local name, callback, flags, description
  for k, v in next, t do
    if not stringlike(k) then
      fail('named argument key given to redis.register_function is not a string')
    end
    local key = string.lower(tostring(k))
    if key == 'function_name' then
      if not stringlike(v) then
        fail('function_name argument given to redis.register_function must be a string')
      end
      name = tostring(v)
    elseif key == 'description' then
      if not stringlike(v) then
        fail('description argument given to redis.register_function must be a string')
      end
      description = tostring(v)
    elseif key == 'callback' then
      if type(v) ~= 'function' then
        fail('callback argument given to redis.register_function must be a function')
      end
      callback = v
    elseif key == 'flags' then
      if type(v) ~= 'table' then
        fail('flags argument to redis.register_function must be a table representing function flags')
      end
      flags = read_flags(v)
      if flags == nil then
        fail('unknown flag given')
      end
    else
      fail('unknown argument given to redis.register_function')
    end
  end
  if name == nil then
    fail('redis.register_function must get a function name argument')
  end
  if callback == nil then
    fail('redis.register_function must get a callback argument')
  end
  return name, callback, flags, description
end

local load_redis = {}
for _, name in ipairs({ 'log', 'LOG_DEBUG', 'LOG_VERBOSE', 'LOG_NOTICE', 'LOG_WARNING',
  'REDIS_VERSION', 'REDIS_VERSION_NUM' }) do
  load_redis[name] = tables.redis[name]
end
load_redis.register_function = function(...)
  if registered == nil then
    fail('redis.register_function can only be called on FUNCTION LOAD command')
  end
  local count = select('#', ...)
  if count < 1 or count > 2 then
    fail('wrong number of arguments to redis.register_function')
  end
  local name, callback, flags, description
  if count == 1 then
    name, callback, flags, description = named_arguments((...))
  else
    local first, second = ...
    if not stringlike(first) then
      fail('first argument to redis.register_function must be a string')
    end
    if type(second) ~= 'function' then
      fail('second argument to redis.register_function must be a function')
    end
    name, callback = tostring(first), second
  end
  -- Redis 7.0 checks a function's name with its library-name message.
  if not name:match('^[%w_]+$') then
    fail('Library names can only contain letters, numbers, or underscores(_) and must be at least one character long')
  end
  for _, seen in ipairs(registered) do
    if seen.name == name then
      fail('Function already exists in the library')
    end
  end
  local flag_list = {}
  for _, flag in ipairs(FLAGS) do
    if flags and flags[flag] then
      flag_list[#flag_list + 1] = flag
    end
  end
  registered[#registered + 1] = { name = name, callback = callback, flags = flag_list, description = description }
end
-- A field the load-time `redis` lacks is refused as a missing global is, as Redis's
-- error metatable on it does.
local load_redis_proxy = setmetatable({}, {
  __index = function(_, name)
    local value = load_redis[name]
    if value == nil then
      missing(name, 3)
    end
    return value
  end,
  __newindex = refuse,
  __metatable = false,
})
guarded[load_redis_proxy] = load_redis
local loading_globals = { redis = load_redis_proxy }

local function function_index(_, name)
  local value
  if registered ~= nil then
    value = rawget(loading_globals, name)
  elseif name ~= 'KEYS' and name ~= 'ARGV' then
    value = rawget(env, name)
  end
  if value == nil then
    missing(name, 3)
  end
  return value
end
local function_env = setmetatable({}, { __index = function_index, __newindex = refuse, __metatable = false })
guarded[function_env] = env
shown[function_env] = shown[sealed_env]

local library = {
  env = function_env,
  -- Runs a library's compiled code: true and what it registered, or false and the
  -- error table.
  load = function(chunk, handler)
    registered = {}
    local ok, e = xpcall(chunk, handler)
    local list = registered
    registered = nil
    if not ok then
      return false, e
    end
    return true, list
  end,
}

return sealed_env, env, library
