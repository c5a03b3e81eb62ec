"""verlconf_wheel: the pip-installable verlconf, written by build_wheel.py from Bazel outputs."""

def _pair(f):
    return f.short_path + "=" + f.path

def _verlconf_wheel_impl(ctx):
    # A directory: the wheel's file name carries its version and the glibc tag, which only
    # the build knows (the revision, the binary's symbol versions).
    out = ctx.actions.declare_directory(ctx.label.name)
    files = depset(transitive = [s[DefaultInfo].files for s in ctx.attr.srcs])
    args = ctx.actions.args()
    args.add("--out", out.path)
    args.add("--version", ctx.attr.version)
    args.add("--revision", ctx.file.revision)
    args.add("--conform", ctx.file.conform)
    args.add_all(files, map_each = _pair)
    ctx.actions.run(
        executable = ctx.executable._builder,
        arguments = [args],
        inputs = depset([ctx.file.revision, ctx.file.conform], transitive = [files]),
        outputs = [out],
        mnemonic = "VerlconfWheel",
        progress_message = "Writing the verlconf wheel",
    )
    return [DefaultInfo(files = depset([out]), runfiles = ctx.runfiles(files = [out]))]

verlconf_wheel = rule(
    implementation = _verlconf_wheel_impl,
    attrs = {
        "conform": attr.label(allow_single_file = True, cfg = "target", mandatory = True),
        "revision": attr.label(allow_single_file = True, mandatory = True),
        "srcs": attr.label_list(allow_files = True),
        "version": attr.string(mandatory = True),
        "_builder": attr.label(default = ":build_wheel", executable = True, cfg = "host"),
    },
)
