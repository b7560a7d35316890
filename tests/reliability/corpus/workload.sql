-- The corpus's SQL workload (tests/reliability/corpus.py), through the
-- sqlite3 shell; {ROWS} is replaced by the scaled row count. Everything it
-- prints depends only on {ROWS}: no random(), no clock.
.headers on
.mode list
PRAGMA page_size = 1024;
PRAGMA cache_size = 64;
CREATE TABLE item(id INTEGER PRIMARY KEY, name TEXT NOT NULL, cat INTEGER, price REAL, note TEXT);
CREATE TABLE cat(id INTEGER PRIMARY KEY, title TEXT UNIQUE);
CREATE TABLE sale(id INTEGER PRIMARY KEY, item INTEGER REFERENCES item(id), qty INTEGER, day TEXT);
CREATE TABLE audit(n INTEGER);
INSERT INTO audit VALUES (0);
CREATE TRIGGER sale_audit AFTER INSERT ON sale BEGIN UPDATE audit SET n = n + new.qty; END;
BEGIN;
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 40)
INSERT INTO cat SELECT x, 'category ' || printf('%03d', x * 17 % 41) FROM c;
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < {ROWS})
INSERT INTO item SELECT x, 'item-' || hex(x * 2654435761 % 4294967296), x % 40 + 1,
  round((x * 7919 % 10007) / 13.0, 2), substr('lorem ipsum dolor sit amet', 1 + x % 20) FROM c;
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < {ROWS} * 2)
INSERT INTO sale SELECT x, x * 31 % {ROWS} + 1, x % 9 + 1, date('2024-01-01', '+' || (x % 365) || ' days') FROM c;
COMMIT;
CREATE INDEX item_cat ON item(cat, price);
CREATE INDEX sale_item ON sale(item);
CREATE VIEW revenue AS
  SELECT i.cat AS cat, sum(s.qty * i.price) AS total, count(*) AS n
  FROM sale s JOIN item i ON i.id = s.item GROUP BY i.cat;
SELECT (SELECT n FROM audit) AS audited, (SELECT count(*) FROM sale) AS sales;
SELECT c.title, printf('%.2f', r.total) AS total, r.n FROM revenue r JOIN cat c ON c.id = r.cat
  ORDER BY r.total DESC LIMIT 5;
SELECT cat, count(*), printf('%.3f', avg(price)), min(name), max(length(note)) FROM item
  GROUP BY cat HAVING count(*) > 1 ORDER BY cat LIMIT 8;
SELECT name, price, rank() OVER (PARTITION BY cat ORDER BY price DESC, id) AS r,
  printf('%.2f', sum(price) OVER (PARTITION BY cat ORDER BY id ROWS BETWEEN 2 PRECEDING AND CURRENT ROW)) AS w
  FROM item WHERE cat IN (3, 7) ORDER BY cat, r LIMIT 12;
SELECT strftime('%m', day) AS month, sum(qty), count(DISTINCT item) FROM sale GROUP BY month ORDER BY month;
SELECT count(*) FROM item WHERE name LIKE 'item-A%' OR name GLOB '*F?' OR note LIKE '%sum%';
SELECT upper(substr(name, 6, 4)), instr(note, 'or'), replace(note, ' ', '_'), trim('  x  '), quote(price)
  FROM item WHERE id % ({ROWS} / 5) = 0 ORDER BY id;
SELECT json_group_array(json_object('id', id, 'p', price)) FROM (SELECT id, price FROM item ORDER BY id LIMIT 4);
SELECT json_extract('{"a":[1,2,{"b":"c"}]}', '$.a[2].b'), json_array_length('[1,2,3]'), json_valid('{x');
SELECT key, value FROM json_each('{"x":1,"y":[2,3],"z":"w"}');
SELECT i.id, (SELECT sum(qty) FROM sale WHERE item = i.id) AS q FROM item i
  WHERE i.id IN (SELECT item FROM sale GROUP BY item HAVING sum(qty) > 20) ORDER BY q DESC, i.id LIMIT 6;
WITH RECURSIVE fib(a, b, n) AS (SELECT 0, 1, 0 UNION ALL SELECT b, a + b, n + 1 FROM fib WHERE n < 60)
  SELECT max(a), count(*) FROM fib;
SELECT typeof(1), typeof(1.5), typeof('x'), typeof(x'00'), typeof(NULL), 7 / 2, 7 % 3, 1 << 40, abs(-3), coalesce(NULL, 'c'),
  nullif(1, 1), iif(1 > 2, 'a', 'b'), cast('12abc' AS INTEGER), round(2.675, 2), char(72, 105), unicode('Z');
UPDATE item SET price = price * 1.1 WHERE cat % 3 = 0;
DELETE FROM sale WHERE qty = 1;
SELECT count(*), printf('%.2f', sum(price)) FROM item;
SELECT (SELECT count(*) FROM sale), (SELECT n FROM audit);
SAVEPOINT sp;
DELETE FROM item WHERE id > {ROWS} / 2;
SELECT count(*) FROM item;
ROLLBACK TO sp;
RELEASE sp;
SELECT count(*) FROM item;
CREATE TABLE t2 AS SELECT cat, group_concat(id, ',') AS ids FROM item WHERE id < 60 GROUP BY cat;
SELECT cat, ids FROM t2 ORDER BY cat LIMIT 4;
ALTER TABLE t2 ADD COLUMN extra TEXT DEFAULT 'none';
ALTER TABLE t2 RENAME TO t3;
SELECT count(*), max(extra) FROM t3;
SELECT * FROM item i LEFT JOIN t3 ON t3.cat = i.cat WHERE i.id < 4 ORDER BY i.id;
VACUUM;
PRAGMA integrity_check;
PRAGMA foreign_key_check;
.mode column
SELECT id, name, price FROM item ORDER BY price DESC, id LIMIT 3;
.mode csv
SELECT id, note FROM item WHERE id <= 3;
.mode json
SELECT id, cat FROM item WHERE id <= 2;
.schema cat
EXPLAIN QUERY PLAN SELECT * FROM item WHERE cat = 3 AND price > 10;
