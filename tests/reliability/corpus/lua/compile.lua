-- the compiler: load() of generated chunks, string.dump and load of the
-- binary, the lexer on every kind of token
local src = {}
for i = 1, N do
  src[#src + 1] = string.format([[
local function f%d(a, b, ...)
  local t = {a, b, ..., x = %d, ["k%d"] = a and b or %d.5}
  if a > b then return a - b elseif a < b then return b - a else return 0 end
end
local s%d = 0
for j = 1, %d do s%d = s%d + f%d(j, %d, j * 2) end
acc = acc + s%d
while acc > 1e6 do acc = acc - 1e6 end
repeat acc = acc + 1 until acc %% 3 == 0
]], i, i, i, i, i, i % 20 + 1, i, i, i, i, i)
  if #src >= 60 then
    local chunk = "local acc = ...\n" .. table.concat(src) .. "return acc\n"
    src = {}
    local f = assert(load(chunk, "=gen"))
    ACC = f(ACC or 0)
    local g = assert(load(string.dump(f), "=dumped", "b"))
    assert(g(0) == f(0))
  end
end
print("generated", ACC)
local bad = 0
for i = 1, N do
  local f, msg = load("local x = " .. string.rep("(", i % 5) .. "1 +", "=bad")
  if not f then bad = bad + 1 end
end
print("syntax errors", bad)
local lex = [==[
local a, b = 0x1F, 3.5e-2 --[[ block ]] -- line
local s = "esc\t\"\65\u{48}\z
           more" .. [[long
string]] .. 'single'
return a // 1 + b * 2 ^ 3 - #s, a ~= b, a <= b, a >= b, not nil, a >> 1, a << 2, ~a
]==]
for _ = 1, N do assert(load(lex)) end
print("lex", load(lex)())
local env = {print = print}
local f = load("x = 1; y = x + 1; return y", "=env", "t", env)
print("env", f(), env.x, env.y)
