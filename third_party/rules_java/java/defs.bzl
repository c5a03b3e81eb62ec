"""Offline rules_java shim: every rule forwards to Bazel's native Java rules.

We build no Java. But any target that resolves toolchains (py_test does) makes
Bazel parse the registered @bazel_tools//tools/jdk:all, whose BUILD file loads
this file; without the shim Bazel 4.2.3 tries to download rules_java.
"""

def java_binary(**attrs):
    native.java_binary(**attrs)

def java_import(**attrs):
    native.java_import(**attrs)

def java_library(**attrs):
    native.java_library(**attrs)

def java_plugin(**attrs):
    native.java_plugin(**attrs)

def java_test(**attrs):
    native.java_test(**attrs)

def java_runtime(**attrs):
    native.java_runtime(**attrs)

def java_toolchain(**attrs):
    native.java_toolchain(**attrs)

def java_package_configuration(**attrs):
    native.java_package_configuration(**attrs)

def java_proto_library(**attrs):
    native.java_proto_library(**attrs)

def java_lite_proto_library(**attrs):
    native.java_lite_proto_library(**attrs)
