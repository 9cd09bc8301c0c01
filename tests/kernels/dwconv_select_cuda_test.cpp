// The selection table (kernels/dwconv/cuda/select.h): the override text form (host only) and the plans select()
// makes for the measured shapes (GPU suites: the TMA kernel's support depends on the device).
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "kernels/dwconv/cuda/select.h"
#include "tests/support/numeric.h"

namespace cnn::dwconv {
namespace {

DwconvParams same_pad(int n, int h, int w, int c, int fh, int fw, int stride = 1) {
  DwconvParams p;
  p.n = n, p.ih = h, p.iw = w, p.c = c, p.fh = fh, p.fw = fw, p.stride_h = stride, p.stride_w = stride;
  p.pad_top = p.pad_bottom = fh / 2;
  p.pad_left = p.pad_right = fw / 2;
  return p;
}

std::string error_of(const std::string& text) {
  try {
    parse_overrides(text, "VAR");
  } catch (const cnn::Error& e) {
    return e.what();
  }
  return "";
}

TEST(DwconvSelect, ParsesEveryOverrideKey) {
  const Overrides o = parse_overrides(
      "fwd=ring,bfc=strip,gemv=16+ring+whole,tma_lane=8,tma_rows=2,tma_cols=16,tma_stages=4,ring_mma=taps,"
      "ring_q=2,cc_groups=2,tile_cols=16,bfc_tile=3x13,pad=off,verbose",
      "VAR");
  EXPECT_TRUE(o.fwd == Kernel::fwd_tc_ring && o.bfc == Kernel::bfc_strip_f16);
  EXPECT_TRUE(o.gemv && o.gemv->tm == 16 && o.gemv->prefetch && o.gemv->whole_filter);
  EXPECT_TRUE(o.tma_lane == 8 && o.tma_rows == 2 && o.tma_cols == 16 && o.tma_stages == 4);
  EXPECT_TRUE(o.ring_mma == RingMma::taps && o.ring_q == 2 && o.cc_groups == 2 && o.tile_cols == 16 && o.verbose);
  EXPECT_TRUE(o.bfc_tile.r == 3 && o.bfc_tile.tm == 13 && o.pad == false);
  EXPECT_TRUE(parse_overrides("pad=on", "VAR").pad == true);
  EXPECT_EQ(parse_overrides("fwd=tile", "VAR").fwd, Kernel::direct_tile);
  EXPECT_EQ(parse_overrides("bfc=small", "VAR").bfc, Kernel::bfc_small);
  EXPECT_EQ(parse_overrides("bfc=span", "VAR").bfc, Kernel::bfc_span);
  EXPECT_EQ(parse_overrides("bfc=tc", "VAR").bfc, Kernel::bfc_tc);
  const Overrides empty = parse_overrides("", "VAR");
  EXPECT_TRUE(!empty.fwd && !empty.bfc && !empty.gemv && empty.tma_cols == 0 && !empty.pad && !empty.verbose);
  const GemvConfig g8 = *parse_overrides("gemv=8", "VAR").gemv;
  EXPECT_TRUE(g8.tm == 8 && !g8.prefetch && !g8.whole_filter);
}

// Every bad key or value is one line that starts with the source's name and names the key.
TEST(DwconvSelect, RejectsBadOverridesNamingTheKey) {
  for (const auto& [text, key] :
       {std::pair{"fwd=fast", "fwd"}, std::pair{"bfc=generic", "bfc"}, std::pair{"gemv=4", "gemv"},
        std::pair{"gemv=16+ring+ring", "gemv"}, std::pair{"gemv=16,ring", "key=value, got 'ring'"},
        std::pair{"tma_cols=24", "tma_cols"}, std::pair{"tma_stages=5", "tma_stages"},
        std::pair{"ring_mma=k16", "ring_mma"}, std::pair{"cc_groups=3", "cc_groups"}, std::pair{"bfc_tile=9x9", "RxTM"},
        std::pair{"speed=max", "unknown key 'speed'"}, std::pair{"fwd", "key=value"}, std::pair{"pad=yes", "pad"},
        std::pair{"ring_q=3", "ring_q"}, std::pair{"tile_cols=24", "tile_cols"}}) {
    const std::string e = error_of(text);
    EXPECT_EQ(e.rfind("VAR", 0), 0u) << text << ": '" << e << "'";
    EXPECT_NE(e.find(key), std::string::npos) << text << ": '" << e << "'";
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
}

TEST(DwconvSelect, AlignmentOfPointers) {
  alignas(16) static char buf[64];
  EXPECT_EQ(alignment_of({buf, nullptr}), 16);
  EXPECT_EQ(alignment_of({buf, buf + 8}), 8);
  EXPECT_EQ(alignment_of({buf + 2, buf + 16}), 2);
  EXPECT_EQ(alignment_of({buf + 1}), 1);
  EXPECT_EQ(alignment_of({nullptr}), 16);
}

// The tiled direct kernel at SLaK's channel counts: 8-row tiles (one row per warp) for FP32 and on maps of at most
// 8 rows, 16-row tiles for FP16 on taller maps; two channels per lane at an even C with tensors aligned to two
// elements. Host only: select queries no device on these shapes.
TEST(DwconvSelect, DirectTilePlans) {
  EXPECT_EQ(direct_tile_height(true, 8), 8);
  EXPECT_EQ(direct_tile_height(true, 9), 16);
  EXPECT_EQ(direct_tile_height(false, 64), 8);
  EXPECT_EQ(direct_tile_lane_channels(998, true, 4), 2);
  EXPECT_EQ(direct_tile_lane_channels(998, true, 2), 1);
  EXPECT_EQ(direct_tile_lane_channels(998, false, 4), 1);
  EXPECT_EQ(direct_tile_lane_channels(998, false, 8), 2);
  EXPECT_EQ(direct_tile_lane_channels(249, true, 16), 1);
  // Filters of up to 13 rows at widths 1-7, 9, 11, 13; 32-column tiles narrowed where a 13x13 halo would not fit
  // in a block's shared memory (FP32: 20 x 44 staged pixels of 68 floats and the taps; FP16's 16-row tile fits).
  const auto geometry = [](int h, int w, int fh, int fw) { return forward_geometry(same_pad(1, h, w, 998, fh, fw)); };
  EXPECT_TRUE(direct_tile_supports(geometry(8, 8, 13, 5)));
  EXPECT_TRUE(direct_tile_supports(geometry(8, 8, 5, 13)));
  EXPECT_TRUE(direct_tile_supports(geometry(8, 8, 12, 9)));
  EXPECT_FALSE(direct_tile_supports(geometry(8, 8, 9, 8)));
  EXPECT_FALSE(direct_tile_supports(geometry(16, 16, 15, 5)));
  EXPECT_FALSE(direct_tile_supports(geometry(8, 8, 5, 15)));
  EXPECT_EQ(direct_tile_width(geometry(8, 8, 13, 13), false), 8);
  EXPECT_EQ(direct_tile_width(geometry(64, 64, 7, 7), false), 32);
  EXPECT_EQ(direct_tile_width(geometry(64, 64, 13, 13), false), 16);
  EXPECT_EQ(direct_tile_width(geometry(64, 64, 13, 13), true), 32);
  Overrides wide;  // a forced tile width whose window exceeds a block's shared memory is refused, naming it
  wide.fwd = Kernel::direct_tile, wide.tile_cols = 32;
  try {
    select(DwconvOp::forward, DType::f32, same_pad(1, 64, 64, 74, 13, 13), BfcAccum::fp32, 16, wide);
    ADD_FAILURE() << "a 32-column 13x13 FP32 tile was accepted";
  } catch (const cnn::Error& e) {
    EXPECT_NE(std::string(e.what()).find("tile_cols"), std::string::npos) << e.what();
  }
  for (DwconvOp op : {DwconvOp::forward, DwconvOp::backward_data}) {
    const std::string name = op == DwconvOp::forward ? "fwd" : "bdc",
                      flipped = op == DwconvOp::forward ? "" : " flipped";
    const auto path = [&](DType t, const DwconvParams& p, int align = 16) {
      const Plan plan = select(op, t, p, BfcAccum::fp32, align, Overrides{});
      EXPECT_TRUE(plan.kernel == Kernel::direct_tile && plan.padded_c == 0) << p.str();
      return plan_name(op, t, p, BfcAccum::fp32, plan);
    };
    const auto tile = [&](const char* dtype, const char* rest) {
      return name + dtype + " direct tile" + flipped + " F=5x5 tile=" + rest;
    };
    const DwconvParams c998 = same_pad(64, 8, 8, 998, 5, 5), c499 = same_pad(64, 16, 16, 499, 5, 5),
                       c249 = same_pad(64, 32, 32, 249, 5, 5);
    EXPECT_EQ(path(DType::f16, c998), tile(" f16", "8x8 lanes=32x2 (C % 8 = 6)"));
    EXPECT_EQ(path(DType::f16, c998, 4), tile(" f16", "8x8 lanes=32x2 (C % 8 = 6)"));
    EXPECT_EQ(path(DType::f16, c998, 2), tile(" f16", "8x8 lanes=32x1 (C % 8 = 6)"));
    EXPECT_EQ(path(DType::f16, c499), tile(" f16", "16x16 lanes=32x1 (C % 8 = 3)"));
    EXPECT_EQ(path(DType::f16, c249), tile(" f16", "16x32 lanes=32x1 (C % 8 = 1)"));
    Overrides cols16;  // the tile_cols override narrows the tile
    cols16.tile_cols = 16;
    EXPECT_EQ(plan_name(op, DType::f16, c249, BfcAccum::fp32, select(op, DType::f16, c249, BfcAccum::fp32, 16, cols16)),
              tile(" f16", "16x16 lanes=32x1 (C % 8 = 1)"));
    EXPECT_EQ(path(DType::f32, c998, 8), tile("", "8x8 lanes=32x2 (C % 4 = 2)"));
    EXPECT_EQ(path(DType::f32, c998, 4), tile("", "8x8 lanes=32x1 (C % 4 = 2)"));
    EXPECT_EQ(path(DType::f32, c499), tile("", "8x16 lanes=32x1 (C % 4 = 3)"));
  }
}

// Two channels per lane need an even C and tensors aligned to two elements; the launcher refuses them otherwise
// before touching the device.
TEST(DwconvSelect, DirectTileRefusesTwoChannelsPerLaneWhereTheyDoNotFit) {
  alignas(16) static __half h[64];
  alignas(16) static float f[64];
  const ConvGeometry even = forward_geometry(same_pad(1, 8, 8, 998, 5, 5));
  const ConvGeometry odd = forward_geometry(same_pad(1, 8, 8, 249, 5, 5));
  EXPECT_THROW(launch_dwconv_direct_tile_f16(h, h, nullptr, h, odd, 2, 8, nullptr), cnn::Error);
  EXPECT_THROW(launch_dwconv_direct_tile_f16(h, h, h + 1, h, even, 2, 8, nullptr), cnn::Error);
  EXPECT_THROW(launch_dwconv_direct_tile_f16(h, h, nullptr, h, even, 3, 8, nullptr), cnn::Error);
  EXPECT_THROW(launch_dwconv_direct_tile(f, f + 1, nullptr, f, even, 2, 8, nullptr), cnn::Error);
  EXPECT_THROW(launch_dwconv_direct_tile(f, f, nullptr, f, odd, 2, 8, nullptr), cnn::Error);
  // A tile width other than 8, 16 or 32, or one whose window exceeds a block's shared memory (13x13 at 32 columns).
  EXPECT_THROW(launch_dwconv_direct_tile(f, f, nullptr, f, odd, 1, 24, nullptr), cnn::Error);
  const ConvGeometry wide = forward_geometry(same_pad(1, 20, 36, 74, 13, 13));
  EXPECT_FALSE(direct_tile_width_fits(wide, false, 32));
  EXPECT_TRUE(direct_tile_width_fits(wide, false, 16));
  EXPECT_EQ(direct_tile_width(wide, false), 16);
  EXPECT_THROW(launch_dwconv_direct_tile(f, f, nullptr, f, wide, 1, 32, nullptr), cnn::Error);
}

// The small-filter backward-filter kernel: the default at stride 1 up to 5x5 with FP32 accumulation where C is not a
// multiple of the vector width, unpadded; not at an aligned C (the register-tile kernel is as fast or faster there,
// on small maps too), not for FP16 beyond 3x3 at an even C (the register-tile kernel's narrow copies, unpadded), with
// hybrid accumulation, beyond 5x5 or at stride 2; the span-staged kernel runs ahead of it (FP16 and FP32) at 5x5,
// 7x7, 9x9, 13x5 and 5x13 (3x3 at odd C and on maps of at most 8 rows) where map rows are whole 16-byte chunks and the
// tensors 16-byte aligned.
// bfc=small forces it (FP32 too, unpadded even with pad=on) up to 7x7 and is refused with ha or where it cannot run.
// Host only: backward-filter selection queries no device.
TEST(DwconvSelect, BfcSmallPlans) {
  const auto bfc = [](DType t, const DwconvParams& p, BfcAccum accum = BfcAccum::fp32, const char* text = "",
                      int align = 16) {
    return select(DwconvOp::backward_filter, t, p, accum, align, parse_overrides(text, "VAR"));
  };
  for (DType t : {DType::f16, DType::f32}) {
    const std::string name = dtype_name(t);
    const DwconvParams odd5 = same_pad(64, 32, 32, 249, 5, 5), odd5b = same_pad(64, 16, 16, 499, 5, 5),
                       odd5c = same_pad(64, 64, 64, 123, 5, 5);
    for (const DwconvParams& p :
         {odd5, odd5b, odd5c, same_pad(64, 8, 8, 998, 3, 3), same_pad(64, 32, 32, 250, 3, 3),
          same_pad(8, 17, 34, 7, 3, 5), same_pad(8, 17, 34, 7, 1, 1), same_pad(8, 17, 33, 249, 5, 5)}) {
      const Plan plan = bfc(t, p);
      const bool span =
          p.fh == p.fw && (p.fh == 5 || (p.fh == 3 && p.oh() <= 8)) && p.iw * p.c % (t == DType::f16 ? 8 : 4) == 0;
      EXPECT_TRUE(plan.kernel == (span ? Kernel::bfc_span : Kernel::bfc_small) && plan.padded_c == 0)
          << name << " " << p.str();
      if (!span) {
        EXPECT_EQ(plan.small_lane_channels, p.c % 2 == 0 ? 2 : 1) << name << " " << p.str();
      }
    }
    EXPECT_EQ(bfc(t, odd5, BfcAccum::fp32, "", 8).kernel, Kernel::bfc_small) << name;  // span needs 16-byte alignment
    EXPECT_EQ(bfc(t, same_pad(2, 8, 8, 998, 5, 5), BfcAccum::fp32, "", 2).small_lane_channels, 1) << name;
    for (const DwconvParams& p : {same_pad(64, 64, 64, 124, 5, 5), same_pad(64, 8, 8, 998, 5, 5)}) {
      const Plan plan = bfc(t, p);
      if (t == DType::f16) {
        EXPECT_TRUE(plan.kernel == Kernel::bfc_span && plan.padded_c == 0) << p.str();
        EXPECT_EQ(bfc(t, p, BfcAccum::fp32, "", 8).kernel, Kernel::bfc_tile) << p.str();  // narrow copies, unpadded
      } else {
        EXPECT_EQ(plan.kernel, p.c % 4 == 0 ? Kernel::bfc_tile : Kernel::bfc_span) << p.str();
      }
    }
    EXPECT_EQ(bfc(t, same_pad(64, 64, 64, 128, 7, 7)).kernel, Kernel::bfc_tile) << name;
    for (const DwconvParams& p : {same_pad(64, 64, 64, 128, 5, 5), same_pad(64, 32, 32, 256, 5, 5),
                                  same_pad(64, 8, 8, 1000, 3, 3)})  // vector C, large and small maps
      EXPECT_NE(bfc(t, p).kernel, Kernel::bfc_small) << name << " " << p.str();
    EXPECT_NE(bfc(t, same_pad(64, 32, 32, 249, 5, 5, 2)).kernel, Kernel::bfc_small) << name;
    EXPECT_EQ(bfc(t, same_pad(64, 32, 32, 249, 7, 7)).kernel, Kernel::bfc_span) << name;
    EXPECT_EQ(bfc(t, same_pad(64, 32, 32, 249, 3, 3)).kernel, Kernel::bfc_span) << name;
    EXPECT_EQ(bfc(t, same_pad(64, 64, 64, 124, 3, 3)).kernel,  // FP16: even C, 64 rows; FP32: aligned
              t == DType::f16 ? Kernel::bfc_small : Kernel::bfc_tile)
        << name;
    // SLaK-T's stage-3 strips and the 9x9 beside them: the span-staged kernel, unpadded; at an aligned C, with 8-byte
    // aligned tensors or beyond its filters the register-tile kernel.
    for (const DwconvParams& p : {same_pad(64, 8, 8, 998, 13, 5), same_pad(64, 8, 8, 998, 5, 13),
                                  same_pad(64, 8, 8, 998, 9, 9), same_pad(64, 32, 32, 249, 9, 9)}) {
      const Plan plan = bfc(t, p);
      EXPECT_TRUE(plan.kernel == Kernel::bfc_span && plan.padded_c == 0) << name << " " << p.str();
      EXPECT_EQ(bfc(t, p, BfcAccum::fp32, "", 8).kernel, Kernel::bfc_tile) << name << " " << p.str();
    }
    EXPECT_EQ(bfc(t, same_pad(64, 8, 8, 1000, 13, 5)).kernel, Kernel::bfc_tile) << name;
    EXPECT_EQ(bfc(t, same_pad(64, 8, 8, 998, 11, 11)).kernel, Kernel::bfc_tile) << name;
    for (const char* text : {"bfc=small", "bfc=small,pad=on"}) {
      const Plan forced = bfc(t, same_pad(64, 64, 64, 249, 7, 7), BfcAccum::fp32, text);
      EXPECT_TRUE(forced.kernel == Kernel::bfc_small && forced.padded_c == 0) << name << " " << text;
    }
    EXPECT_THROW(bfc(t, same_pad(1, 17, 34, 72, 9, 9), BfcAccum::fp32, "bfc=small"), cnn::Error) << name;
    EXPECT_THROW(bfc(t, same_pad(1, 17, 34, 72, 3, 3, 2), BfcAccum::fp32, "bfc=small"), cnn::Error) << name;
  }
  // Hybrid accumulation keeps the run-structured kernels (here the tile kernel on channels padded to 256), and a
  // forced bfc_small with ha is an error that names the accumulation.
  const Plan ha = bfc(DType::f16, same_pad(64, 32, 32, 249, 5, 5), BfcAccum::ha);
  EXPECT_TRUE(ha.kernel == Kernel::bfc_tile && ha.padded_c == 256);
  const std::string error =
      cnn::test::error_of([&] { bfc(DType::f16, same_pad(64, 32, 32, 249, 5, 5), BfcAccum::ha, "bfc=small"); });
  EXPECT_NE(error.find("bfc_small: needs fp32 accumulation"), std::string::npos) << error;
  EXPECT_THROW(bfc(DType::f16, same_pad(64, 32, 32, 249, 5, 5), BfcAccum::ha, "bfc=span"), cnn::Error);
  EXPECT_THROW(bfc(DType::f32, same_pad(64, 33, 33, 249, 5, 5), BfcAccum::fp32, "bfc=span"), cnn::Error);  // W * C % 4
  const Plan forced_span32 = bfc(DType::f32, same_pad(64, 64, 64, 124, 5, 5), BfcAccum::fp32, "bfc=span");
  EXPECT_TRUE(forced_span32.kernel == Kernel::bfc_span && forced_span32.padded_c == 0);
  EXPECT_THROW(bfc(DType::f16, same_pad(64, 32, 32, 249, 5, 5), BfcAccum::fp32, "bfc=span", 8), cnn::Error);
  const Plan forced_span = bfc(DType::f16, same_pad(64, 32, 32, 256, 5, 5), BfcAccum::fp32, "bfc=span,pad=on");
  EXPECT_TRUE(forced_span.kernel == Kernel::bfc_span && forced_span.padded_c == 0);
  EXPECT_THROW(bfc(DType::f32, same_pad(1, 17, 34, 72, 3, 3), BfcAccum::fp32, "bfc=strip"), cnn::Error);
}

// The FP32 table: 3x3 row-sliding, 5x5 TMA (8-byte lanes, 16x8 tiles, three stages), GEMV elsewhere with TM 16 on
// wide maps and the ring between 17 and 32; direct where the fast kernels cannot run.
// FP16 backward-filter with FP32 accumulation: the tensor-core kernel for strips of at most 8 rows and more than 16
// columns (or the transpose) on maps of at least 16 x 16 outputs, unpadded at C % 4 == 0 with 8-byte aligned tensors,
// else on padded copies; not on 8x8 maps, not for squares, not with ha or FP32 data; the override checked.
TEST(DwconvSelect, BfcTcPlans) {
  const auto bfc = [](DType t, const DwconvParams& p, BfcAccum accum = BfcAccum::fp32, const char* text = "",
                      int align = 16) {
    return select(DwconvOp::backward_filter, t, p, accum, align, parse_overrides(text, "VAR"));
  };
  for (const DwconvParams& p : {same_pad(64, 64, 64, 124, 51, 5), same_pad(64, 64, 64, 124, 5, 51),
                                same_pad(64, 64, 64, 128, 51, 5), same_pad(2, 20, 30, 64, 3, 17)}) {
    const Plan plan = bfc(DType::f16, p);
    EXPECT_TRUE(plan.kernel == Kernel::bfc_tc && plan.padded_c == 0) << p.str();
  }
  for (const DwconvParams& p : {same_pad(64, 32, 32, 249, 49, 5), same_pad(64, 32, 32, 249, 5, 49),
                                same_pad(64, 16, 16, 499, 47, 5), same_pad(64, 16, 16, 499, 5, 47)}) {
    const Plan plan = bfc(DType::f16, p);
    EXPECT_TRUE(plan.kernel == Kernel::bfc_tc && plan.padded_c == (p.c + 7) / 8 * 8) << p.str();
  }
  const Plan narrow = bfc(DType::f16, same_pad(64, 64, 64, 124, 51, 5), BfcAccum::fp32, "", 4);  // 4-byte aligned
  EXPECT_TRUE(narrow.kernel == Kernel::bfc_tc && narrow.padded_c == 128);
  EXPECT_EQ(bfc(DType::f16, same_pad(64, 64, 64, 128, 51, 5), BfcAccum::fp32, "", 4).kernel, Kernel::bfc_tile);
  EXPECT_NE(bfc(DType::f16, same_pad(64, 8, 8, 998, 13, 5)).kernel, Kernel::bfc_tc);
  EXPECT_NE(bfc(DType::f16, same_pad(64, 16, 16, 128, 5, 13)).kernel, Kernel::bfc_tc);  // 16 columns or fewer
  EXPECT_NE(bfc(DType::f16, same_pad(64, 12, 64, 128, 5, 51)).kernel, Kernel::bfc_tc);  // 12 rows
  EXPECT_NE(bfc(DType::f16, same_pad(64, 64, 64, 128, 7, 7)).kernel, Kernel::bfc_tc);
  EXPECT_NE(bfc(DType::f16, same_pad(64, 64, 64, 124, 51, 5), BfcAccum::ha).kernel, Kernel::bfc_tc);
  EXPECT_NE(bfc(DType::f32, same_pad(64, 64, 64, 124, 51, 5)).kernel, Kernel::bfc_tc);
  EXPECT_NE(bfc(DType::f16, same_pad(64, 32, 32, 249, 49, 5), BfcAccum::fp32, "pad=off").kernel, Kernel::bfc_tc);
  const Plan forced = bfc(DType::f16, same_pad(64, 64, 64, 128, 7, 7), BfcAccum::fp32, "bfc=tc");
  EXPECT_TRUE(forced.kernel == Kernel::bfc_tc && forced.padded_c == 0);
  EXPECT_EQ(bfc(DType::f16, same_pad(64, 8, 8, 998, 13, 5), BfcAccum::fp32, "bfc=tc").padded_c, 1000);
  EXPECT_THROW(bfc(DType::f32, same_pad(64, 64, 64, 128, 7, 7), BfcAccum::fp32, "bfc=tc"), cnn::Error);
  EXPECT_THROW(bfc(DType::f16, same_pad(64, 64, 64, 128, 7, 7), BfcAccum::ha, "bfc=tc"), cnn::Error);
  EXPECT_THROW(bfc(DType::f16, same_pad(64, 64, 64, 128, 9, 9), BfcAccum::fp32, "bfc=tc"), cnn::Error);
}

TEST(DwconvSelectGpu, Fp32Plans) {
  CNN_REQUIRE_GPU();
  const Overrides none;
  const auto fwd = [&](const DwconvParams& p, int align = 16) {
    return select(DwconvOp::forward, DType::f32, p, BfcAccum::fp32, align, none);
  };
  EXPECT_EQ(fwd(same_pad(1, 17, 34, 72, 3, 3)).kernel, Kernel::fwd_vslide);
  const Plan five = fwd(same_pad(1, 17, 34, 72, 5, 5));
  EXPECT_EQ(five.kernel, Kernel::fwd_tma_cc);
  EXPECT_TRUE(five.tma.lane_bytes == 8 && five.tma.tile_cols == 8 && five.tma.stages == 3);
  const Plan k31 = fwd(same_pad(1, 17, 34, 72, 31, 31));
  EXPECT_TRUE(k31.kernel == Kernel::fwd_gemv && k31.gemv.tm == 16 && k31.gemv.prefetch && !k31.gemv.whole_filter);
  const Plan k7 = fwd(same_pad(1, 17, 34, 72, 7, 7));
  EXPECT_TRUE(k7.kernel == Kernel::fwd_gemv && k7.gemv.tm == 16 && !k7.gemv.prefetch && k7.gemv.whole_filter);
  EXPECT_EQ(fwd(same_pad(1, 17, 8, 72, 7, 7)).gemv.tm, 8);  // narrow map
  const Plan odd = fwd(same_pad(1, 17, 34, 6, 11, 11));     // C % 4 != 0: the GEMV kernel on 8 padded channels
  EXPECT_TRUE(odd.kernel == Kernel::fwd_gemv && odd.padded_c == 8);
  const Plan odd9 = fwd(same_pad(1, 17, 34, 6, 9, 9));  // up to 81 taps: the tiled direct kernel, unpadded
  EXPECT_TRUE(odd9.kernel == Kernel::direct_tile && odd9.padded_c == 0);
  const Plan odd7 = fwd(same_pad(1, 17, 34, 6, 7, 7));  // up to 7x7: the tiled direct kernel, unpadded
  EXPECT_TRUE(odd7.kernel == Kernel::direct_tile && odd7.padded_c == 0);
  EXPECT_EQ(fwd(same_pad(1, 17, 34, 72, 7, 7, 2)).kernel, Kernel::direct);
  EXPECT_EQ(fwd(same_pad(1, 17, 34, 6, 7, 7, 2)).padded_c, 0);  // strided: direct, unpadded
  EXPECT_EQ(fwd(same_pad(1, 17, 34, 72, 7, 7), 8).kernel, Kernel::direct_tile);  // unaligned: the tiled direct kernel
  EXPECT_EQ(fwd(same_pad(1, 17, 34, 72, 13, 13), 8).kernel, Kernel::direct_tile);
  EXPECT_EQ(fwd(same_pad(1, 17, 34, 72, 15, 15), 8).kernel, Kernel::direct);  // beyond its 13 rows
  const Plan bfc = select(DwconvOp::backward_filter, DType::f32, same_pad(1, 17, 34, 6, 7, 7), BfcAccum::fp32, 4, none);
  EXPECT_TRUE(bfc.kernel == Kernel::bfc_tile && bfc.padded_c == 8);
}

// The FP16 table: TMA at 3x3 (16-column tiles) and 5x5 (two rows, two stages), the register kernel at other FW <= 5,
// the ring kernel to FW 64 (8-tap fragments to FW 8, channel pairs from 9), T-theta beyond; backward-filter strips
// at stride-1 filters of <= 9 taps, register tiles above and at stride 2, row warps where C % 4 != 0 at stride 2.
TEST(DwconvSelectGpu, Fp16Plans) {
  CNN_REQUIRE_GPU();
  const Overrides none;
  const auto fwd = [&](const DwconvParams& p) {
    return select(DwconvOp::forward, DType::f16, p, BfcAccum::fp32, 16, none);
  };
  const Plan three = fwd(same_pad(1, 17, 34, 72, 3, 3)), five = fwd(same_pad(1, 17, 34, 72, 5, 5));
  if (three.kernel != Kernel::fwd_tma_cc) GTEST_SKIP() << "the TMA kernel needs sm_90";
  EXPECT_TRUE(three.tma.tile_cols == 16 && three.tma.rows_per_thread == 1 && three.tma.stages == 3);
  EXPECT_TRUE(five.kernel == Kernel::fwd_tma_cc && five.tma.rows_per_thread == 2 && five.tma.stages == 2);
  EXPECT_EQ(fwd(same_pad(1, 64, 34, 72, 30, 3)).tma.tile_cols, 8);  // the wide window ring does not fit
  EXPECT_EQ(fwd(same_pad(1, 17, 34, 72, 5, 3)).kernel, Kernel::fwd_cc_f16);
  // Tall FH x 5 strips (9 <= FH <= 64): the ring kernel on the transposed view (a 5 x FH strip there, channel
  // pairs, tiles as wide as the map's columns allow) once a column fills half its widest tile (12 outputs), the
  // register kernel below that, for shorter strips and beyond the ring kernel's 64 taps; a forced ring kernel runs
  // the maps as they are.
  const Plan tall = fwd(same_pad(1, 17, 24, 72, 51, 5));
  EXPECT_TRUE(tall.kernel == Kernel::fwd_tc_ring && tall.ring_transposed && tall.ring_mma == RingMma::pairs &&
              tall.ring_q == 2);
  EXPECT_EQ(fwd(same_pad(1, 40, 5, 72, 13, 5)).ring_q, 4);
  EXPECT_TRUE(fwd(same_pad(1, 12, 5, 72, 51, 5)).ring_transposed);
  EXPECT_EQ(fwd(same_pad(1, 11, 64, 72, 51, 5)).kernel, Kernel::fwd_cc_f16);
  EXPECT_TRUE(fwd(same_pad(1, 17, 34, 72, 9, 5)).ring_transposed);
  EXPECT_EQ(fwd(same_pad(1, 17, 34, 72, 7, 5)).kernel, Kernel::fwd_cc_f16);
  EXPECT_EQ(fwd(same_pad(1, 70, 34, 72, 65, 5)).kernel, Kernel::fwd_cc_f16);
  EXPECT_FALSE(fwd(same_pad(1, 17, 34, 72, 5, 51)).ring_transposed);
  const Plan forced = select(DwconvOp::forward, DType::f16, same_pad(1, 17, 24, 72, 51, 5), BfcAccum::fp32, 16,
                             parse_overrides("fwd=ring", "VAR"));
  EXPECT_TRUE(forced.kernel == Kernel::fwd_tc_ring && !forced.ring_transposed && forced.ring_mma == RingMma::taps);
  for (int f : {6, 7, 8}) EXPECT_EQ(fwd(same_pad(1, 17, 34, 72, f, f)).ring_mma, RingMma::taps) << f;
  for (int f : {9, 13, 31, 51, 64}) {
    const Plan plan = fwd(same_pad(1, 17, 34, 72, f, f));
    EXPECT_TRUE(plan.kernel == Kernel::fwd_tc_ring && plan.ring_mma == RingMma::pairs && plan.ring_q == 4) << f;
  }
  EXPECT_EQ(fwd(same_pad(1, 17, 80, 72, 65, 65)).kernel, Kernel::fwd_tc);
  const auto bfc = [&](const DwconvParams& p, int align = 16) {
    return select(DwconvOp::backward_filter, DType::f16, p, BfcAccum::ha, align, none).kernel;
  };
  EXPECT_EQ(bfc(same_pad(1, 17, 34, 72, 3, 3)), Kernel::bfc_strip_f16);
  EXPECT_EQ(bfc(same_pad(1, 17, 34, 72, 5, 5)), Kernel::bfc_tile);
  EXPECT_EQ(bfc(same_pad(1, 17, 34, 72, 3, 3, 2)), Kernel::bfc_tile);
  // 8- and 4-byte aligned tensors: the tile kernel with narrower copies; 2-byte aligned: neither it nor the strip kernel.
  EXPECT_EQ(bfc(same_pad(1, 17, 34, 72, 7, 7), 8), Kernel::bfc_tile);
  EXPECT_EQ(bfc(same_pad(1, 17, 34, 72, 7, 7), 4), Kernel::bfc_tile);
  EXPECT_EQ(bfc(same_pad(1, 17, 34, 72, 7, 7), 2), Kernel::bfc_rowwarp_f16);
}

// Channel counts the vector kernels cannot take run them on padded copies (Plan::padded_c): stride-1 forward-style
// ops and backward-filter, except where the FP16 strip or ring kernel takes C % 4 == 0 or the FP16 tile kernel an
// even C unpadded; strided forward-style ops, a forced direct or row-warp kernel and pad=off stay unpadded.
TEST(DwconvSelectGpu, OddChannelsRunPaddedPlans) {
  CNN_REQUIRE_GPU();
  const auto plan = [](DwconvOp op, DType dtype, const DwconvParams& p, const char* text = "") {
    return select(op, dtype, p, BfcAccum::fp32, 16, parse_overrides(text, "VAR"));
  };
  const DwconvOp fwd = DwconvOp::forward, bdc = DwconvOp::backward_data, bfc = DwconvOp::backward_filter;
  for (DwconvOp op : {fwd, bdc}) {
    // A tall strip on columns too short for the ring kernel's transposed view: the register kernel, padded.
    const Plan strip = plan(op, DType::f16, same_pad(1, 11, 16, 124, 51, 5));
    EXPECT_TRUE(strip.kernel == Kernel::fwd_cc_f16 && strip.padded_c == 128);
    const Plan wide = plan(op, DType::f16, same_pad(1, 17, 34, 249, 5, 51));
    EXPECT_TRUE(wide.kernel == Kernel::fwd_tc_ring && wide.padded_c == 256);
    EXPECT_EQ(plan(op, DType::f32, same_pad(1, 17, 34, 249, 13, 13)).padded_c, 252);
    EXPECT_EQ(plan(op, DType::f32, same_pad(1, 17, 34, 124, 13, 13)).padded_c, 0);  // C % 4 == 0
    EXPECT_EQ(plan(op, DType::f16, same_pad(1, 17, 34, 249, 7, 7, 2)).padded_c, 0);
    EXPECT_EQ(plan(op, DType::f16, same_pad(1, 17, 34, 249, 7, 7), "fwd=direct").padded_c, 0);
    EXPECT_EQ(plan(op, DType::f16, same_pad(1, 17, 34, 249, 7, 7), "pad=off").kernel, Kernel::direct_tile);
    EXPECT_EQ(plan(op, DType::f16, same_pad(1, 17, 34, 249, 9, 9), "pad=off").kernel, Kernel::direct_tile);
    EXPECT_EQ(plan(op, DType::f16, same_pad(1, 17, 34, 249, 15, 15), "pad=off").kernel, Kernel::direct);
    // Filters up to 5x5 at such C run unpadded on the tiled direct kernel, and up to 81 taps in FP32 and on FP16
    // maps of at most 16 rows; pad=on still pads them.
    for (DType t : {DType::f16, DType::f32}) {
      const Plan small = plan(op, t, same_pad(1, 17, 34, 249, 5, 5));
      EXPECT_TRUE(small.kernel == Kernel::direct_tile && small.padded_c == 0) << dtype_name(t);
      EXPECT_GT(plan(op, t, same_pad(1, 17, 34, 249, 5, 5), "pad=on").padded_c, 0) << dtype_name(t);
      const Plan short7 = plan(op, t, same_pad(1, 16, 34, 249, 7, 7));
      EXPECT_TRUE(short7.kernel == Kernel::direct_tile && short7.padded_c == 0) << dtype_name(t);
      for (const DwconvParams& q : {same_pad(1, 16, 34, 249, 9, 9), same_pad(1, 16, 34, 249, 13, 5)}) {
        const Plan larger = plan(op, t, q);
        EXPECT_TRUE(larger.kernel == Kernel::direct_tile && larger.padded_c == 0) << dtype_name(t) << " " << q.str();
      }
      EXPECT_GT(plan(op, t, same_pad(1, 16, 34, 249, 11, 11)).padded_c, 0) << dtype_name(t);
    }
    EXPECT_TRUE(plan(op, DType::f32, same_pad(1, 17, 34, 249, 13, 5)).kernel == Kernel::direct_tile);
    EXPECT_GT(plan(op, DType::f16, same_pad(1, 17, 34, 249, 13, 5)).padded_c, 0);
    const Plan tall7 = plan(op, DType::f32, same_pad(1, 17, 34, 249, 7, 7));
    EXPECT_TRUE(tall7.kernel == Kernel::direct_tile && tall7.padded_c == 0);
    EXPECT_GT(plan(op, DType::f16, same_pad(1, 17, 34, 249, 7, 7)).padded_c, 0);
    // FP16 at C % 8 == 4 (SLaK's 124): from 5x5 up the CUDA-core kernel on 4-half lanes, unpadded, if the tensors
    // are 8-byte aligned; at most 2 groups per row. At 3x3 the tiled direct kernel.
    const Plan half4 = plan(op, DType::f16, same_pad(1, 17, 34, 124, 5, 5));
    EXPECT_TRUE(half4.kernel == Kernel::fwd_cc_f16 && half4.padded_c == 0 && half4.cc_groups == 2);
    const Plan half4_3x3 = plan(op, DType::f16, same_pad(1, 17, 34, 124, 3, 3));
    EXPECT_TRUE(half4_3x3.kernel == Kernel::direct_tile && half4_3x3.padded_c == 0);
    EXPECT_EQ(select(op, DType::f16, same_pad(1, 17, 34, 124, 5, 5), BfcAccum::fp32, 4, parse_overrides("", "VAR"))
                  .kernel,
              Kernel::direct_tile);
    EXPECT_THROW(plan(op, DType::f16, same_pad(1, 17, 34, 124, 5, 5), "cc_groups=4"), cnn::Error);
    // ... and where the ring kernel is the aligned choice (7x7 up, tall strips on wide rows), the ring kernel
    // unpadded; 4-byte aligned tensors or pad=on keep the padded plan.
    for (const DwconvParams& q : {same_pad(1, 17, 34, 124, 5, 51), same_pad(1, 17, 34, 124, 51, 5),
                                  same_pad(1, 17, 34, 124, 7, 7)}) {
      const Plan ring = plan(op, DType::f16, q);
      EXPECT_TRUE(ring.kernel == Kernel::fwd_tc_ring && ring.padded_c == 0) << q.str();
      const Plan ring8 = select(op, DType::f16, q, BfcAccum::fp32, 8, parse_overrides("", "VAR"));
      EXPECT_TRUE(ring8.kernel == Kernel::fwd_tc_ring && ring8.padded_c == 0) << q.str();
      EXPECT_EQ(select(op, DType::f16, q, BfcAccum::fp32, 4, parse_overrides("", "VAR")).padded_c, 128) << q.str();
      EXPECT_EQ(plan(op, DType::f16, q, "pad=on").padded_c, 128) << q.str();
    }
    const Plan forced = plan(op, DType::f16, same_pad(1, 17, 16, 124, 51, 5), "fwd=ring");
    EXPECT_TRUE(forced.kernel == Kernel::fwd_tc_ring && forced.padded_c == 0);
    // FP16 at C % 4 == 2 (SLaK's 998): the ring kernel unpadded where it is the aligned choice on the channel-pairs
    // policy (FW >= 9 in its view: 5x13, 9x9, tall strips on wide rows), with 4-byte aligned tensors, and the tiled
    // direct kernel does not run instead (maps of more than 16 rows); padded with 2-byte aligned ones and on the
    // 8-tap policy (forced). On maps of at most 16 rows the tiled direct kernel, unpadded, from 7x7 to 81 taps.
    for (const DwconvParams& q : {same_pad(8, 32, 32, 998, 5, 13), same_pad(8, 32, 32, 998, 9, 9),
                                  same_pad(1, 17, 34, 30, 51, 5), same_pad(1, 17, 34, 14, 5, 51)}) {
      for (int align : {16, 4}) {
        const Plan ring = select(op, DType::f16, q, BfcAccum::fp32, align, parse_overrides("", "VAR"));
        EXPECT_TRUE(ring.kernel == Kernel::fwd_tc_ring && ring.ring_mma == RingMma::pairs && ring.padded_c == 0)
            << q.str() << " align " << align;
      }
      EXPECT_GT(select(op, DType::f16, q, BfcAccum::fp32, 2, parse_overrides("", "VAR")).padded_c, 0) << q.str();
      EXPECT_GT(plan(op, DType::f16, q, "ring_mma=taps").padded_c, 0) << q.str();
    }
    for (const DwconvParams& q : {same_pad(64, 8, 8, 998, 7, 7), same_pad(64, 8, 8, 998, 13, 5),
                                  same_pad(64, 8, 8, 998, 5, 13), same_pad(64, 8, 8, 998, 9, 9)}) {
      const Plan tile = plan(op, DType::f16, q);
      EXPECT_TRUE(tile.kernel == Kernel::direct_tile && tile.padded_c == 0) << q.str();
    }
    EXPECT_EQ(plan(op, DType::f16, same_pad(64, 8, 8, 998, 5, 13), "fwd=ring").padded_c, 0);
  }
  // FP16 backward-filter with hybrid accumulation where the tile kernel is the choice: unpadded at an even C (8- or
  // 4-byte copies), padded at an odd one; the strip kernel unpadded at C % 4 == 0. With FP32 accumulation the same
  // stride-1 shapes up to 5x5 run the small-filter kernel unpadded (DwconvSelect.BfcSmallPlans).
  const auto plan_ha = [](const DwconvParams& p, const char* text = "") {
    return select(DwconvOp::backward_filter, DType::f16, p, BfcAccum::ha, 16, parse_overrides(text, "VAR"));
  };
  const Plan tile = plan_ha(same_pad(1, 17, 34, 124, 51, 5));
  EXPECT_TRUE(tile.kernel == Kernel::bfc_tile && tile.padded_c == 0);
  const Plan tile998 = plan_ha(same_pad(1, 17, 34, 998, 5, 5));
  EXPECT_TRUE(tile998.kernel == Kernel::bfc_tile && tile998.padded_c == 0);
  EXPECT_EQ(plan_ha(same_pad(1, 17, 34, 249, 5, 5)).padded_c, 256);
  EXPECT_EQ(plan_ha(same_pad(1, 17, 34, 998, 3, 3)).padded_c, 1000);  // the strip kernel's choice
  const Plan strip = plan_ha(same_pad(1, 17, 34, 124, 3, 3));
  EXPECT_TRUE(strip.kernel == Kernel::bfc_strip_f16 && strip.padded_c == 0);
  EXPECT_EQ(plan_ha(same_pad(1, 17, 34, 249, 3, 3)).padded_c, 256);
  EXPECT_EQ(plan(bfc, DType::f16, same_pad(1, 17, 34, 12, 3, 3, 2)).padded_c, 0);
  EXPECT_EQ(plan(bfc, DType::f16, same_pad(1, 17, 34, 13, 3, 3, 2)).padded_c, 16);
  EXPECT_EQ(plan(bfc, DType::f16, same_pad(1, 17, 34, 12, 3, 3, 2), "bfc=rowwarp").kernel, Kernel::bfc_rowwarp_f16);
  EXPECT_EQ(plan_ha(same_pad(1, 17, 34, 249, 3, 3), "pad=off").kernel, Kernel::bfc_rowwarp_f16);
  EXPECT_EQ(plan_ha(same_pad(1, 17, 34, 124, 3, 3), "pad=on").padded_c, 128);
  for (const char* text : {"", "pad=off"}) {
    const Plan small = plan(bfc, DType::f16, same_pad(1, 17, 34, 249, 3, 3), text);
    EXPECT_TRUE(small.kernel == Kernel::bfc_small && small.padded_c == 0) << text;
    const Plan tile_fp32 = plan(bfc, DType::f16, same_pad(1, 17, 34, 998, 5, 5), text);  // narrow copies
    EXPECT_TRUE(tile_fp32.kernel == Kernel::bfc_tile && tile_fp32.padded_c == 0) << text;
  }
  EXPECT_EQ(plan(bfc, DType::f16, same_pad(1, 17, 34, 124, 3, 3), "pad=on").padded_c, 128);
  EXPECT_EQ(plan(bfc, DType::f32, same_pad(1, 17, 34, 499, 7, 7)).padded_c, 500);
  const std::string name = dwconv_path_name(fwd, same_pad(1, 17, 34, 249, 5, 51), DType::f16);
  EXPECT_NE(name.find("tc-ring"), std::string::npos) << name;
  EXPECT_NE(name.find("(channels padded 249->256)"), std::string::npos) << name;
}

// A forced kernel that cannot run the shape is an error naming it, never a fallback.
TEST(DwconvSelectGpu, ForcedKernelsAreCheckedAgainstTheShape) {
  CNN_REQUIRE_GPU();
  const auto forced = [](const char* text, DType dtype, const DwconvParams& p, DwconvOp op = DwconvOp::forward) {
    return select(op, dtype, p, BfcAccum::fp32, 16, parse_overrides(text, "VAR"));
  };
  EXPECT_EQ(forced("fwd=ring", DType::f16, same_pad(1, 17, 34, 72, 3, 3)).kernel, Kernel::fwd_tc_ring);
  EXPECT_EQ(forced("fwd=direct", DType::f32, same_pad(1, 17, 34, 72, 3, 3)).kernel, Kernel::direct);
  EXPECT_EQ(forced("fwd=tile", DType::f16, same_pad(1, 17, 34, 72, 3, 3)).kernel, Kernel::direct_tile);
  EXPECT_THROW(forced("fwd=tile", DType::f32, same_pad(1, 17, 34, 72, 15, 15)), cnn::Error);
  EXPECT_THROW(forced("fwd=tile", DType::f32, same_pad(1, 17, 34, 72, 9, 8)), cnn::Error);
  EXPECT_THROW(forced("fwd=tile", DType::f16, same_pad(1, 17, 34, 72, 3, 3, 2)), cnn::Error);
  EXPECT_THROW(forced("fwd=vslide", DType::f32, same_pad(1, 17, 34, 72, 5, 5)), cnn::Error);
  EXPECT_THROW(forced("fwd=gemv", DType::f32, same_pad(1, 17, 34, 72, 5, 5, 2)), cnn::Error);
  EXPECT_THROW(forced("fwd=ring", DType::f32, same_pad(1, 17, 34, 72, 5, 5)), cnn::Error);
  EXPECT_THROW(forced("fwd=cc", DType::f16, same_pad(1, 17, 34, 72, 7, 7)), cnn::Error);
  EXPECT_THROW(forced("fwd=ring", DType::f16, same_pad(1, 17, 34, 72, 3, 3, 2), DwconvOp::backward_data), cnn::Error);
  EXPECT_THROW(forced("bfc=strip", DType::f16, same_pad(1, 17, 34, 72, 3, 3, 2), DwconvOp::backward_filter),
               cnn::Error);
  EXPECT_THROW(forced("bfc=rowwarp", DType::f32, same_pad(1, 17, 34, 72, 3, 3), DwconvOp::backward_filter),
               cnn::Error);
  EXPECT_EQ(forced("bfc=small", DType::f32, same_pad(1, 17, 34, 72, 7, 7), DwconvOp::backward_filter).kernel,
            Kernel::bfc_small);
  EXPECT_THROW(forced("bfc=small", DType::f16, same_pad(1, 17, 34, 72, 3, 3, 2), DwconvOp::backward_filter),
               cnn::Error);
}

}  // namespace
}  // namespace cnn::dwconv
