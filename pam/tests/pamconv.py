# SPDX-License-Identifier: Apache-2.0
"""One pam_authenticate with a conversation the test chooses, through libpam itself (ctypes),
run under pam_wrapper by integration.py. pypamtest cannot make its conversation fail on one
kind of message, nor report the PAM environment; this client can.

Usage: pamconv.py SERVICE USER FLAGS JSON
JSON: {"answers": [...], "fail": ["info", "error", "echo_off", "echo_on"], "items": {"tty": ...},
       "stream": true}
Answers go to the PAM_PROMPT_ECHO_OFF/ON questions in order (none left: the conversation
fails). With "stream", each message is also printed as it comes, as a line
"MSG info|error|prompt TEXT", so that a test can act on it (touch the reader). "ops" names
the PAM calls made in order, as a display manager makes them (default ["authenticate"]):
authenticate, acct_mgmt, setcred (PAM_ESTABLISH_CRED), reinitialize_cred, refresh_cred,
open_session; the first that fails ends the run, and "codes" says what each returned. "env"
(["NAME=value", ...]) goes into the PAM environment first (pam_putenv); "report_env" names
PAM environment variables whose values the output carries in "env". Prints one JSON line: code (what pam_authenticate returned), prompts, info, errors,
env (the PAM environment after the call: pam_get_items.so puts the items there), start, end.
"""
import ctypes
import json
import os
import sys
import time

PAM_PROMPT_ECHO_OFF, PAM_PROMPT_ECHO_ON, PAM_ERROR_MSG, PAM_TEXT_INFO = 1, 2, 3, 4
PAM_CONV_ERR = 19
STYLES = {"echo_off": PAM_PROMPT_ECHO_OFF, "echo_on": PAM_PROMPT_ECHO_ON,
          "error": PAM_ERROR_MSG, "info": PAM_TEXT_INFO}
ITEMS = {"tty": 3, "rhost": 4}


class PamMessage(ctypes.Structure):
    _fields_ = [("msg_style", ctypes.c_int), ("msg", ctypes.c_char_p)]


class PamResponse(ctypes.Structure):
    _fields_ = [("resp", ctypes.c_void_p), ("resp_retcode", ctypes.c_int)]


CONV = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.POINTER(PamMessage)),
                        ctypes.POINTER(ctypes.POINTER(PamResponse)), ctypes.c_void_p)


class PamConv(ctypes.Structure):
    _fields_ = [("conv", CONV), ("appdata_ptr", ctypes.c_void_p)]


# calloc and strdup from the global scope too: under ASan (LD_PRELOAD) they must be the
# allocator whose free libpam calls on the answers.
libc = ctypes.CDLL(None)
libc.calloc.restype = ctypes.c_void_p
libc.calloc.argtypes = [ctypes.c_size_t, ctypes.c_size_t]
libc.strdup.restype = ctypes.c_void_p
libc.strdup.argtypes = [ctypes.c_char_p]
# Symbols looked up in the global scope, so pam_wrapper (LD_PRELOAD) wins over libpam, as it
# does for a program linked with libpam; a lookup through libpam's own handle would bypass it.
ctypes.CDLL("libpam.so.0", mode=ctypes.RTLD_GLOBAL)
pam = ctypes.CDLL(None)
pam.pam_start.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(PamConv),
                          ctypes.POINTER(ctypes.c_void_p)]
pam.pam_set_item.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p]
pam.pam_authenticate.argtypes = [ctypes.c_void_p, ctypes.c_int]
pam.pam_getenv.restype = ctypes.c_char_p
pam.pam_getenv.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
pam.pam_end.argtypes = [ctypes.c_void_p, ctypes.c_int]
pam.pam_putenv.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
for call in ("pam_acct_mgmt", "pam_setcred", "pam_open_session", "pam_close_session"):
    getattr(pam, call).argtypes = [ctypes.c_void_p, ctypes.c_int]
# The PAM calls "ops" may name, each with its flags: a login as a display manager makes it.
OPS = {"authenticate": (pam.pam_authenticate, None), "acct_mgmt": (pam.pam_acct_mgmt, 0),
       "setcred": (pam.pam_setcred, 0x2), "refresh_cred": (pam.pam_setcred, 0x10),
       "reinitialize_cred": (pam.pam_setcred, 0x8), "open_session": (pam.pam_open_session, 0)}

service, user, flags, spec = sys.argv[1], sys.argv[2], int(sys.argv[3]), json.loads(sys.argv[4])
answers = list(spec.get("answers", []))
failing = {STYLES[s] for s in spec.get("fail", [])}
out = {"prompts": [], "info": [], "errors": []}
stream = spec.get("stream", False)


def converse(n, msgs, resp, _):
    replies = libc.calloc(n, ctypes.sizeof(PamResponse))
    for i in range(n):
        # surrogateescape: a byte that is not UTF-8 reaches the test as it was sent
        style = msgs[i].contents.msg_style
        text = msgs[i].contents.msg.decode(errors="surrogateescape")
        if stream:
            kind = {PAM_TEXT_INFO: "info", PAM_ERROR_MSG: "error"}.get(style, "prompt")
            print("MSG %s %s" % (kind, text.replace("\n", " ")), flush=True)
        if style in failing:
            return PAM_CONV_ERR  # libpam frees nothing we allocated: a small leak in a test
        if style in (PAM_PROMPT_ECHO_OFF, PAM_PROMPT_ECHO_ON):
            out["prompts"].append(text)
            if not answers:
                return PAM_CONV_ERR
            r = ctypes.cast(replies + i * ctypes.sizeof(PamResponse), ctypes.POINTER(PamResponse))
            r.contents.resp = libc.strdup(answers.pop(0).encode())
        else:
            out["info" if style == PAM_TEXT_INFO else "errors"].append(text)
    resp[0] = ctypes.cast(replies, ctypes.POINTER(PamResponse))
    return 0


conv = PamConv(CONV(converse), None)
handle = ctypes.c_void_p()
rc = pam.pam_start(service.encode(), os.fsencode(user), ctypes.byref(conv), ctypes.byref(handle))
if rc != 0:
    sys.exit("pam_start: %d" % rc)
for name, value in spec.get("items", {}).items():
    pam.pam_set_item(handle, ITEMS[name], value.encode())
for assignment in spec.get("env", []):
    pam.pam_putenv(handle, assignment.encode())
out["start"] = time.monotonic()
out["codes"] = {}
for op in spec.get("ops", ["authenticate"]):
    call, op_flags = OPS[op]
    rc = call(handle, flags if op_flags is None else op_flags)
    out["codes"][op] = rc
    if op == "authenticate":
        out["code"] = rc
        out["end"] = time.monotonic()
    if rc != 0:
        break
token = pam.pam_getenv(handle, b"PAM_AUTHTOK")
out["env"] = {"PAM_AUTHTOK": token.decode() if token is not None else None}
for name in spec.get("report_env", []):
    value = pam.pam_getenv(handle, name.encode())
    out["env"][name] = value.decode() if value is not None else None
pam.pam_end(handle, out.get("code", 0))
print(json.dumps(out))
