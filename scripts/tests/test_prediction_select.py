"""Tests of scripts/prediction-select.py: which predictions a prediction campaign evaluates."""
import importlib.util
import json
import os
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SPEC = importlib.util.spec_from_file_location(
    "prediction_select", os.path.join(HERE, "..", "prediction-select.py"))
ps = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(ps)


class ReadIds(unittest.TestCase):
    def write(self, name, text):
        d = tempfile.mkdtemp()
        path = os.path.join(d, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def test_jsonl_in_file_order_once_each(self):
        lines = [{"instance_id": i, "model_patch": ""} for i in ["b__b-2", "a__a-1", "b__b-2"]]
        path = self.write("p.jsonl", "\n".join(json.dumps(l) for l in lines) + "\n\n")
        self.assertEqual(ps.read_prediction_ids(path), ["b__b-2", "a__a-1"])

    def test_json_list_and_mapping(self):
        path = self.write("p.json", json.dumps([{"instance_id": "x__x-1"}]))
        self.assertEqual(ps.read_prediction_ids(path), ["x__x-1"])
        path = self.write("m.json", json.dumps({"x__x-1": {"instance_id": "x__x-1"}}))
        self.assertEqual(ps.read_prediction_ids(path), ["x__x-1"])

    def test_a_bad_line_names_the_file_and_line(self):
        path = self.write("p.jsonl", '{"instance_id": "a"}\nnot json\n')
        with self.assertRaises(SystemExit) as e:
            ps.read_prediction_ids(path)
        self.assertIn("p.jsonl:2: not JSON", str(e.exception))


class Select(unittest.TestCase):
    def test_unreachable_and_unmatched_are_told_apart(self):
        chosen, missing, unmatched = ps.select(
            ["s__s-2", "d__d-1", "x__x-9", "s__s-1"], {"s__s-1", "s__s-2", "d__d-1"}, "^s__")
        self.assertEqual(chosen, ["s__s-1", "s__s-2"])
        self.assertEqual(missing, ["x__x-9"])
        self.assertEqual(unmatched, ["d__d-1"])

    def test_without_a_pattern_every_reachable_one(self):
        chosen, missing, unmatched = ps.select(["b", "a"], {"a", "b"})
        self.assertEqual((chosen, missing, unmatched), (["a", "b"], [], []))


if __name__ == "__main__":
    unittest.main()
