-- closures, varargs, coroutines, metatables, errors, integers and floats
local function counter(step)
  local n = 0
  return function(...) n = n + step * select("#", ...); return n end
end
local cs = {}
for i = 1, 10 do cs[i] = counter(i) end
local tot = 0
for i = 1, N * 20 do tot = tot + cs[i % 10 + 1](i, i + 1, nil) end
print("closures", tot)
local function gen(n)
  return coroutine.wrap(function()
    for i = 1, n do coroutine.yield(i, i * i) end
    return "done"
  end)
end
local cg = 0
for r = 1, N // 5 + 1 do
  local g = gen(50)
  for _ = 1, 50 do local a, b = g(); cg = cg + a + b end
  cg = cg + #g()
end
print("coroutines", cg)
local co = coroutine.create(function(a)
  local x = coroutine.yield(a + 1)
  error({code = x})
end)
print(coroutine.resume(co, 1))
local ok, e = coroutine.resume(co, 41)
print("co error", ok, type(e) == "table" and e.code, coroutine.status(co))
local V = {}
V.__index = V
V.__add = function(a, b) return setmetatable({x = a.x + b.x, y = a.y + b.y}, V) end
V.__eq = function(a, b) return a.x == b.x and a.y == b.y end
V.__lt = function(a, b) return a.x * a.x + a.y * a.y < b.x * b.x + b.y * b.y end
V.__tostring = function(a) return "(" .. a.x .. "," .. a.y .. ")" end
V.__call = function(a, k) return a.x * k + a.y end
V.__len = function(a) return math.abs(a.x) + math.abs(a.y) end
local function vec(x, y) return setmetatable({x = x, y = y}, V) end
local acc = vec(0, 0)
local less = 0
for i = 1, N * 10 do
  local v = vec(i % 7 - 3, i % 5 - 2)
  acc = acc + v
  if v < acc then less = less + 1 end
  if v == vec(0, 0) then less = less + 100 end
end
print("metatables", tostring(acc), less, acc(3), #acc)
local proxy = setmetatable({}, {__index = function(_, k) return k * 2 end,
                                __newindex = function(t, k, v) rawset(t, k, v + 1) end})
for i = 1, N do proxy[i] = i end
local ps = 0
for i = 1, N * 2 do ps = ps + proxy[i] end
print("proxy", ps)
local errs = 0
for i = 1, N * 5 do
  local ok2, msg = pcall(function()
    if i % 3 == 0 then error("bad " .. i) end
    if i % 3 == 1 then return nil + i end
    return i
  end)
  if not ok2 then errs = errs + #tostring(msg):gsub("^.-:%d+: ", "") end
end
print("errors", errs)
print("xpcall", xpcall(function() error("x", 0) end, function(m) return "handled " .. m end))
do
  local log = {}
  do
    local a <close> = setmetatable({}, {__close = function() log[#log + 1] = "a" end})
    local b <close> = setmetatable({}, {__close = function() log[#log + 1] = "b" end})
  end
  print("close", table.concat(log))
end
local ia, fa = 0, 0.0
for i = 1, N * 50 do
  ia = (ia * 31 + i) % 2147483647
  fa = fa + math.sin(i) * math.sqrt(i) / (1 + math.abs(math.cos(i)))
end
print("numbers", ia, string.format("%.6f", fa), 7 // 2, -7 // 2, 7 % -3, 2^10, 10 / 4, 3 | 5, 6 & 3, 1 << 40, ~0)
print(math.tointeger(3.0), math.type(1), math.type(1.0), math.ult(1, -1), math.fmod(7, 3), math.floor(-2.5))
local i = 0
::top::
i = i + 1
if i < N then goto top end
print("goto", i)
