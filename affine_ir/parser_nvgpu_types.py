"""The parametric ``!nvgpu`` types of the Hopper ops, in full and in the elided form upstream prints.

``!nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 2>``,
``!nvgpu.tensormap.descriptor<tensor = memref<128x64xf16, 3>, swizzle = swizzle_128b, l2promo = none,
oob = zero, interleave = none>``, ``!nvgpu.warpgroup.descriptor<tensor = memref<128x64xf16, 3>>`` and
``!nvgpu.warpgroup.accumulator<fragmented = vector<128x64xf32>>``: their parameters are ``key = value``
in any order (MLIR's ``struct`` format); ``num_barriers`` may be left out (1).

Inside the nvgpu ops, upstream prints these types without the dialect prefix (``-> <memorySpace = ...>``,
``: <tensor = memref<...>, swizzle = ...>``): :meth:`NVGPUTypeParser.parse_nvgpu_type` reads a type
where the op knows which class it expects, in either spelling (or through a ``!alias``).
"""

from __future__ import annotations

from collections.abc import Callable

from .lexer import Token
from .parser_base import ParserBase, describe_token
from .types import (
    TMA_INTERLEAVES,
    TMA_L2PROMOS,
    TMA_OOBS,
    TMA_SWIZZLES,
    MBarrierGroupType,
    MBarrierTokenType,
    MemRefType,
    TensorMapDescriptorType,
    Type,
    VectorType,
    WarpgroupAccumulatorType,
    WarpgroupDescriptorType,
    intern,
    mbarrier_token,
)

#: The spelled name of each nvgpu type class (what an error message says was expected).
NVGPU_TYPE_NAMES: dict[type, str] = {
    MBarrierGroupType: "!nvgpu.mbarrier.group", TensorMapDescriptorType: "!nvgpu.tensormap.descriptor",
    WarpgroupDescriptorType: "!nvgpu.warpgroup.descriptor", WarpgroupAccumulatorType: "!nvgpu.warpgroup.accumulator",
    MBarrierTokenType: "!nvgpu.mbarrier.token",
}


class NVGPUTypeParser(ParserBase):
    """Parses the bodies (``<...>``) of the parametric nvgpu types; ``TypeAttrParser`` builds on it
    (``parse_type`` and ``_parse_memory_space`` come from there)."""

    def parse_nvgpu_type_body(self, cls: type) -> Type:
        """The ``<...>`` of the nvgpu type class ``cls`` (the name before it already read, or elided)."""
        body = {MBarrierGroupType: self._mbarrier_group_body, TensorMapDescriptorType: self._tensor_map_body,
                WarpgroupDescriptorType: self._warpgroup_descriptor_body,
                WarpgroupAccumulatorType: self._accumulator_body}[cls]
        return intern(body())

    def parse_nvgpu_type(self, cls: type) -> Type:
        """A type of class ``cls`` in an nvgpu op's type position: in full (``!nvgpu.mbarrier.group<...>``,
        or a ``!alias`` of it), or with the dialect prefix elided (``<...>``) as upstream prints it there.
        A ParseError at the type when it is of another class."""
        loc = self.loc()
        if self.at("<") and cls in (MBarrierGroupType, TensorMapDescriptorType, WarpgroupDescriptorType,
                                    WarpgroupAccumulatorType):
            return self.parse_nvgpu_type_body(cls)
        t = self.parse_type()
        if not isinstance(t, cls):
            raise self.error(f"expected a {NVGPU_TYPE_NAMES[cls]} type, found {t}", loc)
        return t

    def nvgpu_type_named(self, tok: Token) -> Type | None:
        """The nvgpu type whose name is the bang token ``tok`` (already read): its body parsed; None
        when ``tok`` names no nvgpu type of the Hopper ops."""
        if tok.text == "!nvgpu.mbarrier.token":
            return mbarrier_token
        for cls, name in NVGPU_TYPE_NAMES.items():
            if name == tok.text:
                return self.parse_nvgpu_type_body(cls)
        return None

    # -- bodies ---------------------------------------------------------------------------
    def _struct(self, what: str, params: dict[str, Callable[[], object]], optional: tuple[str, ...] = ()) -> dict:
        """``<key = value, ...>`` with each key of ``params`` once, in any order (``optional`` ones may
        be left out): the values by key."""
        open_loc = self.loc()
        self.expect("<", f"to begin the parameters of {what}")
        out: dict[str, object] = {}

        def entry():
            tok = self.peek()
            if tok.kind != "id" or tok.text not in params:
                raise self.error(f"expected a parameter of {what} ({', '.join(params)}), found {describe_token(tok)}")
            if tok.text in out:
                raise self.error(f"parameter '{tok.text}' of {what} given twice")
            self.next()
            self.expect("=")
            out[tok.text] = params[tok.text]()

        self.parse_comma_list(entry)
        self.expect(">", f"to close the parameters of {what}")
        missing = [k for k in params if k not in out and k not in optional]
        if missing:
            raise self.error(f"{what} is missing the parameter{'s' if len(missing) > 1 else ''} "
                             f"{', '.join(missing)}", open_loc)
        return out

    def _memory_space_param(self):
        space = self._parse_memory_space()
        if isinstance(space, int) and self.accept(":"):  # upstream prints an integer space as '3 : i64'
            self.parse_keyword(("i64",))
        return space

    def _positive_param(self) -> int:
        loc = self.loc()
        n = self.parse_integer("a positive integer")
        if n < 1:
            raise self.error(f"expected a positive integer, found {n}", loc)
        return n

    def _typed_param(self, cls: type, what: str) -> Callable[[], Type]:
        def parse() -> Type:
            loc = self.loc()
            t = self.parse_type()
            if not isinstance(t, cls):
                raise self.error(f"expected {what}, found {t}", loc)
            return t
        return parse

    def _mbarrier_group_body(self) -> MBarrierGroupType:
        out = self._struct("!nvgpu.mbarrier.group", {"memorySpace": self._memory_space_param,
                                                     "num_barriers": self._positive_param}, ("num_barriers",))
        return MBarrierGroupType(out["memorySpace"], out.get("num_barriers", 1))

    def _tensor_map_body(self) -> TensorMapDescriptorType:
        def keyword(options):
            return lambda: self.parse_keyword(options)

        out = self._struct("!nvgpu.tensormap.descriptor", {
            "tensor": self._typed_param(MemRefType, "a memref type (the box in shared memory)"),
            "swizzle": keyword(TMA_SWIZZLES), "l2promo": keyword(TMA_L2PROMOS), "oob": keyword(TMA_OOBS),
            "interleave": keyword(TMA_INTERLEAVES)})
        return TensorMapDescriptorType(out["tensor"], out["swizzle"], out["l2promo"], out["oob"], out["interleave"])

    def _warpgroup_descriptor_body(self) -> WarpgroupDescriptorType:
        out = self._struct("!nvgpu.warpgroup.descriptor",
                           {"tensor": self._typed_param(MemRefType, "a memref type (the operand tile)")})
        return WarpgroupDescriptorType(out["tensor"])

    def _accumulator_body(self) -> WarpgroupAccumulatorType:
        out = self._struct("!nvgpu.warpgroup.accumulator",
                           {"fragmented": self._typed_param(VectorType, "a vector type (the M x N tile)")})
        return WarpgroupAccumulatorType(out["fragmented"])
