-- tables: arrays, records, sorting with and without a comparator, moves
local t = {}
for i = 1, N * 30 do t[i] = (i * 7919) % 10007 end
table.sort(t)
print("sorted", t[1], t[#t], #t)
local recs = {}
for i = 1, N * 10 do
  recs[i] = {id = i, name = "n" .. (i * 31 % 97), score = (i * 13) % 50 + i / 1000}
end
table.sort(recs, function(a, b)
  if a.score ~= b.score then return a.score > b.score end
  return a.id < b.id
end)
print("recs", recs[1].id, recs[1].name, recs[#recs].id)
local byname = {}
for _, r in ipairs(recs) do
  local l = byname[r.name] or {}
  l[#l + 1] = r.id
  byname[r.name] = l
end
local names = {}
for k in pairs(byname) do names[#names + 1] = k end
table.sort(names)
print("groups", #names, names[1], #byname[names[1]], table.concat(byname[names[#names]], ",", 1, math.min(3, #byname[names[#names]])))
local q = {}
for i = 1, N * 10 do table.insert(q, 1, i) end
for i = 1, N * 5 do table.remove(q) end
for i = 1, N do table.insert(q, i * 2, -i) end
print("queue", #q, q[1], q[2], q[#q])
local m = table.move(q, 1, 20, 5, {})
print("move", #m, m[5], m[24], table.concat(m, " ", 5, 10))
print("unpack", select("#", table.unpack(q, 1, 50)), (table.unpack(q, 3, 3)))
local mat = {}
for i = 1, 30 do
  mat[i] = {}
  for j = 1, 30 do mat[i][j] = (i * j) % 11 end
end
local tr = 0
for r = 1, N // 10 + 1 do
  local p = {}
  for i = 1, 30 do
    p[i] = {}
    for j = 1, 30 do
      local s = 0
      for k = 1, 30 do s = s + mat[i][k] * mat[k][j] end
      p[i][j] = s % 1000
    end
  end
  mat = p
  tr = tr + p[1][1] + p[30][30]
end
print("matrix", tr)
local sparse = {}
for i = 1, N * 20 do sparse[i * i % 100003] = i end
local c, s = 0, 0
for k, v in pairs(sparse) do c = c + 1; s = s + k + v end
print("sparse", c, s)
