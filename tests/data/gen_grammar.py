#!/usr/bin/env python3
"""Writes envfile-grammar.json: the env-file grammar of docs/reference.md §4 as rows.
Each row: rule (what it shows), input (the file), and either entries
([name, value, line] in file order, duplicates included) or error
({line, problem}). Run it after editing the rows; the JSON is what tests read."""
import json, os

S = "SENTINEL-s3cr3t-VALUE"
rows = []
def ok(rule, text, *entries):
    rows.append({"rule": rule, "input": text, "entries": [list(e) for e in entries]})
def bad(rule, text, line, problem):
    rows.append({"rule": rule, "input": text, "error": {"line": line, "problem": problem}})

ok("simple pair", "KEY1=VALUE1\nKEY2=VALUE2\n", ("KEY1", "VALUE1", 1), ("KEY2", "VALUE2", 2))
ok("no final newline", "A=1", ("A", "1", 1))
ok("empty file", "")
ok("blank lines and comments ignored", "\n  \n\t\n# c\n   # indented comment\nA=1\n", ("A", "1", 6))
ok("CRLF line endings", "A=1\r\nB=2\r\n", ("A", "1", 1), ("B", "2", 2))
ok("CR before end of file is a line ending", "A=1\r", ("A", "1", 1))
ok("lone CR inside an unquoted value is kept", "A=x\ry\n", ("A", "x\ry", 1))
ok("export prefix ignored", "export A=1\nexport\tB=2\nexport   C = 3\n", ("A", "1", 1), ("B", "2", 2), ("C", "3", 3))
ok("export alone is a name", "export=1\nexport = 2\nexportX=3\n", ("export", "1", 1), ("export", "2", 2), ("exportX", "3", 3))
ok("split at the first =", "A=b=c==\n", ("A", "b=c==", 1))
ok("blanks around the name and after = ignored", "  A  =  v\n\tB\t=\tw\n", ("A", "v", 1), ("B", "w", 2))
ok("unquoted trailing blanks trimmed", "A=v  \t\n", ("A", "v", 1))
ok("unquoted inner blanks kept", "A=a b  c\n", ("A", "a b  c", 1))
ok("unquoted comment after blank", "A=v # comment\nB=v\t# tab comment\n", ("A", "v", 1), ("B", "v", 2))
ok("hash without blank is part of value", "A=v#x\nB=#x\n", ("A", "v#x", 1), ("B", "#x", 2))
ok("blank then hash right after = is an empty value", "A= #x\n", ("A", "", 1))
ok("quotes inside unquoted value kept", "A=a'b'\nB=x\"y\"\nC=it's\n", ("A", "a'b'", 1), ("B", "x\"y\"", 2), ("C", "it's", 3))
ok("empty value is a value", "A=\nB=''\nC=\"\"\n", ("A", "", 1), ("B", "", 2), ("C", "", 3))
ok("relaxed names", "Logging:LogLevel:Default=Debug\n1ABC=x\nwith space=y\n~!@$%^&*()=z\n",
   ("Logging:LogLevel:Default", "Debug", 1), ("1ABC", "x", 2), ("with space", "y", 3), ("~!@$%^&*()", "z", 4))
ok("single quoted literal", "A='a \"b\" \\n $x #c'\n", ("A", "a \"b\" \\n $x #c", 1))
ok("single quoted keeps blanks", "A='  v  '\n", ("A", "  v  ", 1))
ok("single quoted spans lines", "A='line1\n  line2\n\n# not a comment\nend'\nB=2\n",
   ("A", "line1\n  line2\n\n# not a comment\nend", 1), ("B", "2", 6))
ok("single quoted CRLF inside dropped to LF", "A='x\r\ny'\r\nB=2\r\n", ("A", "x\ny", 1), ("B", "2", 3))
ok("single quoted lone CR kept", "A='x\ry'\n", ("A", "x\ry", 1))
ok("comment after closing quote", "A='v' # c\nB=\"w\"#c\nC='x'   \n", ("A", "v", 1), ("B", "w", 2), ("C", "x", 3))
ok("blanks before the opening quote", "A=   'v'\n", ("A", "v", 1))
ok("double quoted escapes", "A=\"q\\\"b\\\\n\\nt\\tr\\rd\\$\"\n", ("A", "q\"b\\n\nt\tr\rd$", 1))
ok("double quoted other backslash kept", "A=\"\\a\\x\\'\\\"\"\n", ("A", "\\a\\x\\'\"", 1))
ok("double quoted spans lines", "A=\"one\ntwo\"\nB=3\n", ("A", "one\ntwo", 1), ("B", "3", 3))
ok("double quoted CRLF inside dropped to LF", "A=\"x\r\ny\"\r\n", ("A", "x\ny", 1))
ok("double quoted backslash before newline kept", "A=\"x\\\ny\"\n", ("A", "x\\\ny", 1))
ok("double quoted dollar and parens literal", "A=\"$(B) ${C} $D\"\n", ("A", "$(B) ${C} $D", 1))
ok("duplicates: all kept in order (last wins on lookup)", "A=1\nA=2\n", ("A", "1", 1), ("A", "2", 2))
ok("multi-byte UTF-8 value", "A=caf\u00e9 \u20ac \U0001F600\n", ("A", "caf\u00e9 \u20ac \U0001F600", 1))
ok("line numbers after multi-line values", "A='1\n2\n3'\n\nB=x\n", ("A", "1\n2\n3", 1), ("B", "x", 5))

bad("byte-order mark", "\ufeffA=" + S + "\n", 1, "ByteOrderMark")
bad("no equals", "A=1\n" + S + "\n", 2, "NoEquals")
bad("export with nothing after", "export \n", 1, "NoEquals")
bad("empty name", "=" + S + "\n", 1, "EmptyName")
bad("blank name", "   =" + S + "\n", 1, "EmptyName")
bad("name with a tab inside", "A\tB=" + S + "\n", 1, "InvalidName")
bad("name with non-ASCII", "caf\u00e9=" + S + "\n", 1, "InvalidName")
bad("name with a control byte", "A\x01=" + S + "\n", 1, "InvalidName")
bad("unclosed single quote names the opening line", "A=1\nB='" + S + "\nC=3\n", 2, "UnclosedSingleQuote")
bad("unclosed double quote names the opening line", "A=1\n\nB=\"" + S + "\\\"\n", 3, "UnclosedDoubleQuote")
bad("text after closing single quote", "A='x'" + S + "\n", 1, "TextAfterQuote")
bad("second quoted string", "A='a''b" + S + "'\n", 1, "TextAfterQuote")
bad("text after closing quote of a multi-line value", "A=\"x\ny\" " + S + "\n", 2, "TextAfterQuote")
bad("NUL in an unquoted value", "A=" + S + "\x00\n", 1, "NulInValue")
bad("NUL in a quoted value", "A='" + S + "\x00'\n", 1, "NulInValue")
bad("an error on a later line fails the file", "A=" + S + "\nB=ok\nC\n", 3, "NoEquals")

here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "envfile-grammar.json"), "w") as f:
    json.dump({"about": "The env-file grammar of docs/reference.md §4, as rows. Generated by gen_grammar.py; "
               "entries are [name, value, line] in file order. SENTINEL marks text that must never be printed.",
               "sentinel": S, "rows": rows}, f, indent=1, ensure_ascii=False)
    f.write("\n")
print(len(rows), "rows")
