"""The storm-kafka document: json-simple 1.1 bytes and Storm 1.0.3+ read rules.

Expected strings are written out by hand from json-simple's escaping rules:
``"`` ``\\`` ``/`` and ``\\b \\f \\n \\r \\t`` get short escapes; U+0000-U+001F,
U+007F-U+009F and U+2000-U+20FF become ``\\uXXXX`` in upper-case hex; the rest
is raw.
"""

import pytest

from storm_kafka_compat.offsets.document import (
    document_fields,
    encode_document,
    json_simple_dumps,
    parse_document,
)

# --- json_simple_dumps --------------------------------------------------------------


@pytest.mark.parametrize("value, expected", [
    ("", '""'),
    ("plain", '"plain"'),
    ("a/b", '"a\\/b"'),
    ('say "hi"', '"say \\"hi\\""'),
    ("back\\slash", '"back\\\\slash"'),
    ("\b\f\n\r\t", '"\\b\\f\\n\\r\\t"'),
    ("\x00", '"\\u0000"'),
    ("\x01\x1f", '"\\u0001\\u001F"'),
    ("\x7f", '"\\u007F"'),
    ("\x85", '"\\u0085"'),          # NEL, a C1 control
    ("\x9f", '"\\u009F"'),
    ("\xa0", '"\xa0"'),             # just past the C1 range: raw
    ("\u1fff", '"\u1fff"'),         # just before the U+2000 block: raw
    ("\u2000", '"\\u2000"'),
    ("\u2028\u2029", '"\\u2028\\u2029"'),
    ("\u20ac", '"\\u20AC"'),        # the euro sign is in the escaped block
    ("\u20ff", '"\\u20FF"'),
    ("\u2100", '"\u2100"'),         # just after: raw
    ("caf\u00e9", '"caf\u00e9"'),   # non-ASCII kept raw
    ("\u65e5\u672c", '"\u65e5\u672c"'),
    ("\U0001F600", '"\U0001F600"'),
    (0, "0"),
    (-5, "-5"),
    (2**63 - 1, "9223372036854775807"),
    (True, "true"),
    (False, "false"),
    (None, "null"),
    ({}, "{}"),
    ([], "[]"),
    ({"b": 1, "a": [1, "x", None, False]}, '{"b":1,"a":[1,"x",null,false]}'),
    ({"k/ey": {"n": (2, 3)}}, '{"k\\/ey":{"n":[2,3]}}'),
])
def test_json_simple_dumps(value, expected):
    assert json_simple_dumps(value) == expected


@pytest.mark.parametrize("value", [1.5, 12.0, {1: "a"}, {"a"}, b"x", object()])
def test_json_simple_dumps_rejects_other_types(value):
    with pytest.raises(TypeError):
        json_simple_dumps(value)


# --- encode_document ---------------------------------------------------------------

_DOC = dict(topology_id="clicks-17-1514764800", topology_name="clicks", offset=4821907,
            partition=3, broker_host="kafka-2.example.com", broker_port=9092, topic="clicks")


def test_encode_document_matches_storm_bytes():
    assert encode_document(**_DOC) == (
        b'{"topology":{"id":"clicks-17-1514764800","name":"clicks"},"offset":4821907,'
        b'"partition":3,"broker":{"host":"kafka-2.example.com","port":9092},"topic":"clicks"}')


def test_encode_document_escapes_and_encodes_utf8():
    data = encode_document(topology_id="5747dba6-c947-4c4f-af4a-4f50a84817bf",
                           topology_name="caf\u00e9/eu\u2028", offset=1, partition=0,
                           broker_host="h", broker_port=1, topic="t")
    assert data == (b'{"topology":{"id":"5747dba6-c947-4c4f-af4a-4f50a84817bf",'
                    b'"name":"caf\xc3\xa9\\/eu\\u2028"},"offset":1,"partition":0,'
                    b'"broker":{"host":"h","port":1},"topic":"t"}')


@pytest.mark.parametrize("field, value, error", [
    ("offset", True, TypeError),
    ("offset", 12.0, TypeError),
    ("offset", "12", TypeError),
    ("offset", 2**63, ValueError),
    ("partition", False, TypeError),
    ("partition", "3", TypeError),
    ("partition", -1, ValueError),
    ("broker_port", None, TypeError),
    ("broker_port", 9092.0, TypeError),
    ("broker_port", 70000, ValueError),
    ("topology_id", None, TypeError),
    ("topic", 5, TypeError),
])
def test_encode_document_rejects_bad_values(field, value, error):
    with pytest.raises(error) as info:
        encode_document(**{**_DOC, field: value})
    assert field in str(info.value)


@pytest.mark.parametrize("topology_id, offset", [
    ("x", 1), ("a/b\\c\"d", 2**63 - 1), ("\u00e9\u2028\x00\x85", 0), ("t", -5),
])
def test_encoded_documents_read_back(topology_id, offset):
    doc = parse_document(encode_document(**{**_DOC, "topology_id": topology_id,
                                            "offset": offset}))
    assert (doc.problem, doc.topology_id, doc.offset) == (None, topology_id, offset)


# --- parse_document: documents Storm resumes from -----------------------------------------

@pytest.mark.parametrize("data, topology_id, offset", [
    (b'{"topology":{"id":"clicks-17-1514764800","name":"clicks"},"offset":4821907,'
     b'"partition":3,"broker":{"host":"kafka-2.example.com","port":9092},"topic":"clicks"}',
     "clicks-17-1514764800", 4821907),
    # a 0.9.x/0.10.x document: a UUID id
    (b'{"topology":{"id":"5747dba6-c947-4c4f-af4a-4f50a84817bf","name":"t"},"offset":17,'
     b'"partition":0,"broker":{"host":"h","port":9092},"topic":"t"}',
     "5747dba6-c947-4c4f-af4a-4f50a84817bf", 17),
    # the minimum Storm needs
    (b'{"topology":{"id":"x"},"offset":5}', "x", 5),
    # offset <= 0 parses; the start-up decision treats it as no state
    (b'{"topology":{"id":"x"},"offset":0}', "x", 0),
    (b'{"topology":{"id":"x"},"offset":-5}', "x", -5),
    (b'{"topology":{"id":"x"},"offset":9223372036854775807}', "x", 2**63 - 1),
    # whitespace, key order and escapes do not matter
    (b' {\n\t"offset" : 8 ,\r\n "topology" : { "id" : "a\\/b\\u00e9" } } ', "a/b\u00e9", 8),
    # json-simple's grammar is lenient about commas and colons, and takes leading zeros
    (b'{"topology":{"id":"x"} "offset":7}', "x", 7),
    (b'{,"topology":{"id" "x",},,"offset":007,}', "x", 7),
    # a duplicate key: the last one wins (HashMap.put)
    (b'{"topology":{"id":"x"},"offset":1,"offset":9}', "x", 9),
    # malformed UTF-8 is replaced like Java's decoder does, not rejected
    (b'{"topology":{"id":"a\xffb"},"offset":3}', "a\ufffdb", 3),
])
def test_documents_storm_resumes_from(data, topology_id, offset):
    doc = parse_document(data)
    assert doc.problem is None
    assert doc.usable
    assert (doc.topology_id, doc.offset) == (topology_id, offset)
    assert doc.data == data


# --- parse_document: every malformed kind of spec 11 case 6 -------------------------------

@pytest.mark.parametrize("data, problem", [
    # offset as a float, a string or null, or missing
    (b'{"topology":{"id":"x"},"offset":12.0}', "offset is not an integer (12.0)"),
    (b'{"topology":{"id":"x"},"offset":1e3}', "offset is not an integer (1000.0)"),
    (b'{"topology":{"id":"x"},"offset":"12"}', 'offset is not an integer ("12")'),
    (b'{"topology":{"id":"x"},"offset":null}', "offset is not an integer (null)"),
    (b'{"topology":{"id":"x"},"offset":true}', "offset is not an integer (true)"),
    (b'{"topology":{"id":"x"},"offset":[1]}', "offset is not an integer ([1])"),
    (b'{"topology":{"id":"x"}}', "offset missing"),
    (b'{"topology":{"id":"x"},"offset":9223372036854775808}',
     "offset 9223372036854775808 is outside Java's 64-bit long range"),
    # topology missing or not an object
    (b'{"offset":5}', "topology missing"),
    (b'{"topology":"x","offset":5}', 'topology is not an object ("x")'),
    (b'{"topology":["x"],"offset":5}', 'topology is not an object (["x"])'),
    (b'{"topology":null,"offset":5}', "topology is not an object (null)"),
    # topology.id not a string
    (b'{"topology":{"name":"n"},"offset":5}', "topology.id missing"),
    (b'{"topology":{"id":5},"offset":5}', "topology.id is not a string (5)"),
    (b'{"topology":{"id":null},"offset":5}', "topology.id is not a string (null)"),
    (b'{"topology":{"id":{"a":1}},"offset":5}', 'topology.id is not a string ({"a": 1})'),
    # invalid JSON, an empty byte string, or a JSON array/number/null/string root
    (b"", "empty document"),
    (b"   ", "invalid JSON"),
    (b'{"topology":{"id":"x"},"offset":5', "invalid JSON"),
    (b'{"topology":{"id":"x"},"offset":5}}', "invalid JSON"),
    (b'{"topology":{"id":"x"},"offset":5} x', "invalid JSON"),
    (b"{'topology':{'id':'x'},'offset':5}", "invalid JSON"),
    (b'{"topology":{"id":"x"},"offset":NaN}', "invalid JSON"),
    (b'{"topology":{"id":"x"},"offset":.5}', "invalid JSON"),
    (b'{"topology":{"id":"x\\q"},"offset":5}', "invalid JSON"),
    (b'{"topology":{"id":"x"},5:5}', "invalid JSON"),
    (b'\xef\xbb\xbf{"topology":{"id":"x"},"offset":5}', "invalid JSON"),
    (b'{"topology":{"id":"x"},"offset":5,"partition":99999999999999999999}',
     "invalid JSON (integer 99999999999999999999 is outside Java's 64-bit long range)"),
    (b'[{"topology":{"id":"x"},"offset":5}]', "root is not an object (array)"),
    (b"5", "root is not an object (number)"),
    (b"null", "root is not an object (null)"),
    (b'"text"', "root is not an object (string)"),
])
def test_malformed_documents_are_no_state(data, problem):
    doc = parse_document(data)
    assert doc.problem is not None and doc.problem.startswith(problem), doc.problem
    assert not doc.usable
    assert doc.data == data


@pytest.mark.parametrize("data, reason", [
    # a document cut short (a write cut off, a hand edit saved half-way) is named so,
    # not as a key that is not a string
    (b'{"topology":{"id":"x","name":"n"},"offset":12', "before the object's closing '}'"),
    (b'{"topology":{"id":"x","name":"n"},"offs', "inside a string"),
    (b'{"topology":{"id":"x","name":"n"},"offset":', "after the key 'offset'"),
    (b'{"topology":{"id":"x","name":"n"},"offset":12,"l":[1,', "before the array's closing ']'"),
    (b'{', "before the object's closing '}'"),
])
def test_a_truncated_document_says_it_is_truncated(data, reason):
    problem = parse_document(data).problem
    assert problem == f"invalid JSON (truncated: the document ends {reason})", problem


def test_problem_document_keeps_the_readable_parts_for_display():
    doc = parse_document(b'{"topology":{"id":"x"},"offset":12.0}')
    assert doc.topology_id == "x" and doc.offset is None
    assert doc.parsed == {"topology": {"id": "x"}, "offset": 12.0}
    assert parse_document(b"{").parsed is None


def test_document_fields():
    parsed = parse_document(encode_document(**_DOC)).parsed
    assert document_fields(parsed) == {
        "topic": "clicks", "partition": 3,
        "broker": {"host": "kafka-2.example.com", "port": 9092}, "topology_name": "clicks"}
    assert document_fields({"topic": 1, "partition": True, "broker": {"host": "h"}}) == {
        "topic": None, "partition": None, "broker": None, "topology_name": None}
    assert document_fields([1]) == {"topic": None, "partition": None, "broker": None,
                                    "topology_name": None}
