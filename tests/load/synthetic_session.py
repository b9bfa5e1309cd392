"""A synthetic recorded session of N exchanges, shaped as `ctxproxy bench` generates them
(a question, a read_file call, a 40-100 line output that varies per exchange, a conclusion),
for `ctxproxy replay FILE --via-proxy` at sizes the recorded fixtures do not reach:

    python3 tests/load/synthetic_session.py 1000 > /tmp/synthetic-1000.jsonl
    ctxproxy replay /tmp/synthetic-1000.jsonl --via-proxy
"""
import json
import sys


def exchange(i: int) -> dict:
    path = "src/module_%d.rs" % (i % 97)
    output = "".join(
        "pub fn handler_%d_%d(input: &str) -> Result<usize, Error> { parse(input).map(|v| v.len() + %d) }\n"
        % (i, line, line)
        for line in range(40 + i % 60)
    )
    return {"messages": [
        {"role": "user", "content": "Why does handler_%d fail on empty input in %s? Check the parser." % (i, path)},
        {"role": "assistant", "content": "Reading %s." % path,
         "toolCalls": [{"id": "c%d" % i, "name": "read_file", "arguments": {"path": path}}]},
        {"role": "tool", "toolCallId": "c%d" % i, "name": "read_file", "content": output},
        {"role": "assistant", "content": "handler_%d calls parse() without checking for an empty string; "
                                         "I added an early return in %s." % (i, path)},
    ]}


if __name__ == "__main__":
    for i in range(int(sys.argv[1])):
        print(json.dumps(exchange(i)))
