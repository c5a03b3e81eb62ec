"""cuda_library: compile .cu files with the system nvcc, wrap them in a cc_library.

No rules_cuda (it would have to be downloaded). A small rule rather than a
plain genrule, because nvcc must see the headers of every C++ dependency
(e.g. oracle/*.h, gtest) and only CcInfo knows that transitive header set
and its -I/-isystem/-D flags. Each .cu is compiled whole-program (no -rdc).
Device code: by default compute_90 PTX only (the CPU-only builds of CI never run it,
and ptxas per architecture would double their nvcc time); with
--define=cuda_fatbin=1 sm_80 and sm_90 SASS plus compute_90 PTX, so the GPU runs
prebuilt code and newer GPUs can JIT; with --define=cuda_fatbin=sm_90
(tools/gpu/gpu_check.sh: the lent machine is an H200) sm_90 SASS alone, compressed for
size, because the bundle must travel in the device tool's 64 MiB.
"""

load("@bazel_tools//tools/cpp:toolchain_utils.bzl", "find_cpp_toolchain")

NVCC = "/usr/local/cuda/bin/nvcc"

NVCC_FLAGS = [
    "-std=c++17",
    "-O3",
    "--expt-relaxed-constexpr",
    "-Xcompiler",
    "-fPIC",
]

GENCODE_PTX = ["-gencode", "arch=compute_90,code=compute_90"]

GENCODE_SM90 = ["-gencode", "arch=compute_90,code=sm_90", "--compress-mode=size"]

GENCODE_FATBIN = [
    "-gencode",
    "arch=compute_80,code=sm_80",
    "-gencode",
    "arch=compute_90,code=sm_90",
    "-gencode",
    "arch=compute_90,code=compute_90",
]

# Files nvcc reads but cc_library rejects by extension.
_CUDA_ONLY = (".cu", ".cuh")

def _nvcc_objects_impl(ctx):
    cc_toolchain = find_cpp_toolchain(ctx)
    cc = cc_common.merge_cc_infos(
        cc_infos = [d[CcInfo] for d in ctx.attr.deps if CcInfo in d],
    ).compilation_context

    args = list(NVCC_FLAGS)

    # Host compiler = Bazel's C++ compiler, so host code and ABI match.
    args += ["-ccbin", cc_toolchain.compiler_executable]

    # Workspace-relative includes ("cuda_impl/<family>/<file>.h", "oracle/core/<file>.h"), also for
    # generated headers, then whatever the deps export.
    args += ["-I.", "-I" + ctx.bin_dir.path, "-I" + ctx.genfiles_dir.path]
    args += ["-I" + p for p in cc.quote_includes.to_list()]
    args += ["-I" + p for p in cc.includes.to_list()]
    args += ["-isystem=" + p for p in cc.system_includes.to_list()]
    args += ["-D" + d for d in cc.defines.to_list()]
    args += ctx.attr.copts

    inputs = depset(
        [f for f in ctx.files.srcs + ctx.files.hdrs if not f.path.endswith(".cu")],
        transitive = [cc.headers],
    )
    objs = []
    for src in ctx.files.srcs:
        if not src.path.endswith(".cu"):
            continue

        # Keep the package-relative path so a/k.cu and b/k.cu do not collide.
        # ".pic.o": Bazel then uses the object for both PIC and non-PIC links.
        rel = src.short_path[len(ctx.label.package) + 1:] if ctx.label.package else src.short_path
        obj = ctx.actions.declare_file("_cuda_objs/%s/%s.pic.o" % (ctx.label.name, rel[:-len(".cu")]))
        ctx.actions.run(
            executable = NVCC,
            arguments = args + ["-c", src.path, "-o", obj.path],
            inputs = depset([src], transitive = [inputs, cc_toolchain.all_files]),
            outputs = [obj],
            # PATH for the host compiler's own helpers (as, ld).
            use_default_shell_env = True,
            mnemonic = "NvccCompile",
            progress_message = "nvcc %s" % src.short_path,
        )
        objs.append(obj)
    return [DefaultInfo(files = depset(objs))]

_nvcc_objects = rule(
    implementation = _nvcc_objects_impl,
    attrs = {
        "srcs": attr.label_list(allow_files = True),
        "hdrs": attr.label_list(allow_files = True),
        "deps": attr.label_list(providers = [CcInfo]),
        "copts": attr.string_list(),
        "_cc_toolchain": attr.label(default = "@bazel_tools//tools/cpp:current_cc_toolchain"),
    },
    toolchains = ["@bazel_tools//tools/cpp:toolchain_type"],
    fragments = ["cpp"],
)

# The C++ compiler's flags for the host copy: Thrust's device system is its CPP system
# there (no CUDA compiler), and the sources take the host-only branches of system.cuh.
HOST_COPTS = ["-DTHRUST_DEVICE_SYSTEM=THRUST_DEVICE_SYSTEM_CPP"]

def cuda_library(name, srcs, hdrs = [], deps = [], cuda_deps = [], copts = [], host = True, **kwargs):
    """A cc_library whose .cu sources are compiled by nvcc, and its host copy.

    `name` is the nvcc build: device code and the host path, filling the registry's cuda
    and cuda-host slots. `name + "_host"` (unless host = False) is the same sources
    compiled by the C++ compiler through Thrust's CPP system: the cuda-host slot alone,
    in seconds instead of minutes, for every binary that never touches a GPU. A binary
    links one of the two (both would register cuda-host twice: the registry refuses).

    Args:
      name: cc_library name; depend on it like on any cc_library.
      srcs: .cu files (compiled by nvcc), plus private .h/.cuh/.cc files.
      hdrs: public headers (.h; .cuh are visible to nvcc only).
      deps: cc_library deps; their headers are visible to nvcc.
      cuda_deps: deps that are cuda_library targets themselves: the host copy depends
        on their host copies.
      copts: extra nvcc flags (use -Xcompiler for host-compiler flags).
      host: whether to make the host copy (false for hand-written kernels).
      **kwargs: passed to the cc_library (visibility, testonly, tags...).
    """
    if host:
        _cuda_host_library(name + "_host", srcs, hdrs, deps, [_host_label(d) for d in cuda_deps], **kwargs)
    deps = deps + cuda_deps
    _nvcc_objects(
        name = name + "_nvcc",
        srcs = srcs,
        hdrs = hdrs,
        deps = deps + ["@cuda//:cuda_headers"],
        copts = copts + select({
            "//third_party/cuda:fatbin": GENCODE_FATBIN,
            "//third_party/cuda:sm_90": GENCODE_SM90,
            "//conditions:default": GENCODE_PTX,
        }),
        testonly = kwargs.get("testonly", False),
        tags = kwargs.get("tags", []),
        visibility = ["//visibility:private"],
    )
    native.cc_library(
        name = name,
        srcs = ([":" + name + "_nvcc"] if [s for s in srcs if s.endswith(".cu")] else []) +
               [s for s in srcs if not s.endswith(_CUDA_ONLY)],
        hdrs = [h for h in hdrs if not h.endswith(_CUDA_ONLY)],
        # .cuh headers travel with the library for the nvcc compiles of its dependents.
        textual_hdrs = [h for h in hdrs if h.endswith(".cuh")],
        deps = deps + [
            "@cuda//:cuda_headers",
            "@cuda//:cudart_static",
        ],
        # Link the objects straight into binaries: no per-library .so that
        # would need its own copy of the static CUDA runtime.
        linkstatic = True,
        **kwargs
    )

def _host_label(label):
    # "//pkg" is "//pkg:pkg"; the host copy of any cuda_library is its name + "_host".
    if ":" not in label:
        label = label + ":" + label.split("/")[-1]
    return label + "_host"

def _cuda_host_library(name, srcs, hdrs, deps, host_cuda_deps, **kwargs):
    # cc_library compiles only C++ extensions: each .cu is copied to a .cc first.
    copies = []
    for src in srcs:
        if not src.endswith(".cu"):
            continue
        out = name + "_srcs/" + src[:-len(".cu")] + ".cc"
        native.genrule(
            name = name + "_cp_" + src.replace("/", "_").replace(".", "_"),
            srcs = [src],
            outs = [out],
            cmd = "cp $< $@",
            testonly = kwargs.get("testonly", False),
            visibility = ["//visibility:private"],
        )
        copies.append(out)
    native.cc_library(
        name = name,
        srcs = copies + [s for s in srcs if not s.endswith(_CUDA_ONLY)],
        hdrs = [h for h in hdrs if not h.endswith(_CUDA_ONLY)],
        textual_hdrs = [h for h in hdrs if h.endswith(".cuh")] + [s for s in srcs if s.endswith(".cuh")],
        copts = HOST_COPTS,
        deps = deps + host_cuda_deps + [
            "@cuda//:cccl_headers",
            "@cuda//:cudart_static",
        ],
        linkstatic = True,
        **kwargs
    )
