#!/bin/bash
set -uxo pipefail
source /opt/miniconda3/bin/activate
conda activate testbed
cd /testbed
git diff HEAD 110048f9837f8441ea536804115e80b69f400277 >> /root/pre_state.patch
git config --global --add safe.directory /testbed
cd /testbed
git status
git show
git diff 110048f9837f8441ea536804115e80b69f400277
source /opt/miniconda3/bin/activate
conda activate testbed
python -m pip install .
git apply -v - <<'EOF_114329324912'
diff --git a/requests/sessions.py b/requests/sessions.py
--- a/requests/sessions.py
+++ b/requests/sessions.py
@@ -168,8 +168,11 @@ def resolve_redirects(self, resp, req, stream=False, timeout=None,
             if new_auth is not None:
                 prepared_request.prepare_auth(new_auth)
 
+            # Override the original request.
+            req = prepared_request
+
             resp = self.send(
-                prepared_request,
+                req,
                 stream=stream,
                 timeout=timeout,
                 verify=verify,

EOF_114329324912
git apply -v - <<'EOF_114329324912'
diff --git a/reproduce_bug.py b/reproduce_bug.py
new file mode 100644
index 00000000..747bd8d2
--- /dev/null
+++ b/reproduce_bug.py
@@ -0,0 +1,54 @@
+import requests
+from requests.sessions import Session
+from requests.adapters import HTTPAdapter
+from requests.models import Response
+from requests.structures import CaseInsensitiveDict
+
+# Create a mock response for the initial POST request that redirects with a 303 status code
+response_post_303 = Response()
+response_post_303.status_code = 303
+response_post_303.headers = CaseInsensitiveDict({'Location': '/new_thing_1513'})
+
+# Create a mock response for the GET request that redirects with a 307 status code
+response_get_307 = Response()
+response_get_307.status_code = 307
+response_get_307.headers = CaseInsensitiveDict({'Location': '//failover.example.com/new_thing_1513'})
+
+# Create a session and attach a mock adapter that will simulate the redirection chain
+session = Session()
+adapter = HTTPAdapter()
+
+def request_flow(req):
+    if req.url == 'http://server.example.com/do_something':
+        response_post_303.request = req  # Set the request attribute on the mock response
+        return response_post_303
+    elif req.url == 'http://server.example.com/new_thing_1513':
+        response_get_307.request = req  # Set the request attribute on the mock response
+        return response_get_307
+    elif req.url == 'http://failover.example.com/new_thing_1513':
+        # Create a final mock response for the redirected GET request
+        response_final_get = Response()
+        response_final_get.status_code = 200  # OK status to indicate the final response
+        response_final_get.request = req
+        return response_final_get
+    return None  # Return None for all other URLs to prevent actual network requests
+
+adapter.build_response = request_flow
+session.mount('http://', adapter)
+
+# Simulate the initial POST request
+request = requests.Request('POST', 'http://server.example.com/do_something')
+prepared_request = session.prepare_request(requests.Request('POST', 'http://server.example.com/do_something'))
+initial_response = Response()
+initial_response.status_code = 302
+initial_response.headers['Location'] = 'http://server.example.com/new_thing_1513'
+initial_response.request = prepared_request
+initial_response.raw = type('MockRaw', (), {'release_conn': lambda: None})
+response_history = list(session.resolve_redirects(initial_response, prepared_request))
+
+# Check if the method of the last request is GET as expected after the 303 redirect
+final_method = response_history[-1].request.method
+print(f"Final request method: {final_method}")
+assert final_method == 'GET', "The final request method should be GET after a 303 redirect followed by a 307 redirect."
+
+print("Script completed successfully, no errors.")

EOF_114329324912
python3 /testbed/reproduce_bug.py
echo $?
git checkout 110048f9837f8441ea536804115e80b69f400277
git apply /root/pre_state.patch
