-- the collector: garbage, full and incremental cycles, weak tables,
-- finalizers, the generational mode
collectgarbage("incremental")
local keep = {}
for round = 1, 5 do
  for i = 1, N * 20 do
    local t = {i, tostring(i), {i}}
    if i % 50 == 0 then keep[#keep + 1] = t end
  end
  collectgarbage("step", 0)
end
collectgarbage()
print("kept", #keep)
local weak = setmetatable({}, {__mode = "v"})
for i = 1, N * 10 do weak[i] = {i} end
for i = 1, N * 10, 2 do keep[#keep + 1] = weak[i] end
collectgarbage()
local alive = 0
for i = 1, N * 10 do if weak[i] then alive = alive + 1 end end
print("weak", alive)
local order = {}
for i = 1, 20 do
  setmetatable({}, {__gc = function() order[#order + 1] = i end})
end
collectgarbage()
collectgarbage()
print("finalized", #order, order[1], order[#order])
collectgarbage("generational")
local s = 0
for i = 1, N * 30 do
  local t = {x = i, y = {i * 2}}
  s = s + t.x + t.y[1]
end
collectgarbage()
collectgarbage("incremental")
print("generational", s)
local strs = {}
for i = 1, N * 20 do strs[i] = ("s" .. i):rep(i % 4 + 1) end
local total = 0
for i = 1, #strs do total = total + #strs[i] end
print("strings", total, collectgarbage("isrunning"))
