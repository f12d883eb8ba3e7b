#!/bin/bash
set -uxo pipefail
source /opt/miniconda3/bin/activate
conda activate testbed
cd /testbed
git diff HEAD 8dcb12a6cf500e8738d6729ab954a261758f49ca >> /root/pre_state.patch
git config --global --add safe.directory /testbed
cd /testbed
git status
git show
git diff 8dcb12a6cf500e8738d6729ab954a261758f49ca
source /opt/miniconda3/bin/activate
conda activate testbed
python -m pip install -e .
git apply -v - <<'EOF_114329324912'
diff --git a/reproduce_issue.py b/reproduce_issue.py
new file mode 100644
index 0000000000..b83240b14c
--- /dev/null
+++ b/reproduce_issue.py
@@ -0,0 +1,14 @@
+from sympy import symbols, sinc, ccode, Piecewise, sin, Ne
+
+# Define the symbols
+x, theta = symbols('x theta')
+
+# Attempt to generate C code for sinc(x)
+sinc_code = ccode(sinc(x))
+print("ccode(sinc(x)) output:")
+print(sinc_code)
+
+# Generate C code for the Piecewise representation of sinc
+piecewise_sinc_code = ccode(Piecewise((sin(theta)/theta, Ne(theta, 0)), (1, True)))
+print("\\nccode(Piecewise((sin(theta)/theta, Ne(theta, 0)), (1, True))) output:")
+print(piecewise_sinc_code)
diff --git a/sympy/printing/ccode.py b/sympy/printing/ccode.py
index 30a07a7b59..7185233540 100644
--- a/sympy/printing/ccode.py
+++ b/sympy/printing/ccode.py
@@ -43,6 +43,7 @@
     "atanh": "atanh",
     "floor": "floor",
     "ceiling": "ceil",
+    "sinc": [(lambda x: True, "((%(x)s != 0) ? (sin(%(x)s)/%(x)s) : (1))")],
 }
 
 # These are the core reserved words in the C language. Taken from:

EOF_114329324912
PYTHONWARNINGS='ignore::UserWarning,ignore::SyntaxWarning' python3 /root/trace.py --count -C coverage.cover --include-pattern '/testbed/(sympy/printing/ccode\.py)' bin/test -C --verbose reproduce_issue.py sympy/printing/ccode.p
cat coverage.cover
git checkout 8dcb12a6cf500e8738d6729ab954a261758f49ca
git apply /root/pre_state.patch
