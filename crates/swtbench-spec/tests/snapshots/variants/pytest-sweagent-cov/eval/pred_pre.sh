#!/bin/bash
set -uxo pipefail
source /opt/miniconda3/bin/activate
conda activate testbed
cd /testbed
git diff HEAD 6995257cf470d2143ad1683824962de4071c0eb7 >> /root/pre_state.patch
git config --global --add safe.directory /testbed
cd /testbed
git status
git show
git diff 6995257cf470d2143ad1683824962de4071c0eb7
source /opt/miniconda3/bin/activate
conda activate testbed
python -m pip install -e .
git apply -v - <<'EOF_114329324912'
diff --git a/src/_pytest/assertion/rewrite.py b/src/_pytest/assertion/rewrite.py
index 157903faf..9eca86769 100644
--- a/src/_pytest/assertion/rewrite.py
+++ b/src/_pytest/assertion/rewrite.py
@@ -742,8 +742,8 @@ class AssertionRewriter(ast.NodeVisitor):
                     nodes.append(field)
 
     @staticmethod
-    def is_rewrite_disabled(docstring: str) -> bool:
-        return "PYTEST_DONT_REWRITE" in docstring
+    def is_rewrite_disabled(docstring: Optional[str]) -> bool:
+        return "PYTEST_DONT_REWRITE" in docstring if isinstance(docstring, str) else False
 
     def variable(self) -> str:
         """Get a new variable."""

EOF_114329324912
python3 /root/trace.py --count -C coverage.cover --include-pattern '/testbed/(src/_pytest/assertion/rewrite\.py)' -m pytest -rA src/_pytest/assertion/rewrite.py
cat coverage.cover
git checkout 6995257cf470d2143ad1683824962de4071c0eb7
git apply /root/pre_state.patch
