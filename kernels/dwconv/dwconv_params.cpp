// DwconvParams validation and formatting, and the pointer check, shared by every backend's entry points.
#include "core/error.h"
#include "kernels/dwconv/dwconv.h"

namespace cnn::dwconv {

void DwconvParams::validate(const char* op) const {
  CNN_CHECK(n >= 1 && ih >= 1 && iw >= 1 && c >= 1, op, ": expected N, IH, IW, C >= 1, got ", str());
  CNN_CHECK(fh >= 1 && fw >= 1, op, ": expected filter extents >= 1, got ", str());
  CNN_CHECK(stride_h >= 1 && stride_w >= 1, op, ": expected strides >= 1, got ", str());
  CNN_CHECK(pad_top >= 0 && pad_bottom >= 0 && pad_left >= 0 && pad_right >= 0, op,
            ": expected non-negative padding, got ", str());
  CNN_CHECK(ih + pad_top + pad_bottom >= fh && iw + pad_left + pad_right >= fw, op,
            ": filter larger than the padded input (output would be empty), got ", str());
  CNN_CHECK(x_elems() < (int64_t(1) << 31) && y_elems() < (int64_t(1) << 31), op,
            ": tensors over 2^31 elements are not supported, got ", str());
}

void check_pointers(const char* op, const void* a, const char* a_name, const void* b, const char* b_name,
                    const void* out, const char* out_name) {
  CNN_CHECK(a && b && out, op, ": expected non-null ", a_name, ", ", b_name, " and ", out_name, ", got ", a_name,
            a ? "=set " : "=null ", b_name, b ? "=set " : "=null ", out_name, out ? "=set" : "=null");
}

std::string DwconvParams::str() const {
  return str_cat("N=", n, " IH=", ih, " IW=", iw, " C=", c, " F=", fh, "x", fw, " s=", stride_h, "x", stride_w,
                 " p=(", pad_top, ",", pad_bottom, ",", pad_left, ",", pad_right, ")");
}

}  // namespace cnn::dwconv
