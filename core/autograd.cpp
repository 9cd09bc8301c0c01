// Tape recording and reverse replay with gradient accumulation.
#include "core/autograd.h"

#include <unordered_map>

namespace cnn {

namespace {
thread_local bool t_grad_enabled = true;

// Leaf grads are FP32 accumulators (FP64 for f64 leaves, so gradient checks keep double precision) owned by the
// leaf; the first contribution is copied, never aliased.
void accumulate_leaf(AutogradMeta& meta, const Tensor& g) {
  if (!meta.grad.defined()) {
    Tensor acc = Tensor::empty(g.shape(), g.dtype() == DType::f64 ? DType::f64 : DType::f32, g.device(), "grad");
    acc.copy_(g);
    meta.grad = acc;
  } else {
    meta.grad.add_(g);
  }
}

// Whether no other tensor (view, node output, captured value) shares t's storage: then t may be summed into.
bool sole_owner(const Tensor& t) { return t.storage().use_count() == 1 && t.is_contiguous(); }

// Sums a second gradient of an inner tensor. Either gradient may be shared (a pass-through such as add's backward
// returns its output gradient for both inputs), so the sum goes in place only into one that nothing else holds:
// one pass over the data instead of a copy and a pass.
void accumulate_inner(std::unordered_map<AutogradMeta*, Tensor>& grads, AutogradMeta* key, Tensor g) {
  auto it = grads.find(key);
  if (it == grads.end()) {
    grads.emplace(key, std::move(g));
  } else if (sole_owner(it->second) && it->second.dtype() == g.dtype()) {
    it->second.add_(g);
  } else if (sole_owner(g) && g.dtype() == it->second.dtype()) {
    g.add_(it->second);
    it->second = std::move(g);
  } else {
    Tensor sum = it->second.clone();
    sum.add_(g);
    it->second = std::move(sum);
  }
}
}  // namespace

bool grad_enabled() { return t_grad_enabled; }

NoGradGuard::NoGradGuard() : previous_(t_grad_enabled) { t_grad_enabled = false; }
NoGradGuard::~NoGradGuard() { t_grad_enabled = previous_; }

bool Tape::should_record(const Tape* tape, std::initializer_list<const Tensor*> inputs) {
  if (tape == nullptr || !t_grad_enabled) return false;
  for (const Tensor* t : inputs) {
    if (t != nullptr && t->defined() && t->requires_grad()) return true;
  }
  return false;
}

void Tape::record(const char* op, std::initializer_list<const Tensor*> inputs, std::initializer_list<Tensor*> outputs,
                  BackwardFn backward) {
  CNN_CHECK(backward != nullptr, "Tape::record(", op, "): missing backward function");
  if (freed_) {  // a freed tape starts a new graph
    nodes_.clear();
    freed_ = false;
  }
  Node node;
  node.op = op;
  node.backward = std::move(backward);
  for (const Tensor* t : inputs) {
    InputSlot s;
    if (t != nullptr && t->defined()) {
      s.shape = t->shape();
      s.device = t->device();
      if (t->requires_grad()) s.meta = t->autograd_meta();
    }
    node.inputs.push_back(std::move(s));
  }
  for (Tensor* t : outputs) {
    CNN_CHECK(t != nullptr && t->defined(), "Tape::record(", op, "): undefined output");
    auto meta = std::make_shared<AutogradMeta>();
    meta->requires_grad = true;
    meta->is_leaf = false;
    t->set_autograd_meta(meta);
    node.outputs.push_back(OutputSlot{meta, t->shape(), t->dtype(), t->device()});
  }
  if (observer_ != nullptr) node.tag = observer_->on_record(op);
  nodes_.push_back(std::move(node));
}

void Tape::backward(const Tensor& loss, bool retain_graph) {
  CNN_CHECK(loss.defined(), "Tape::backward: undefined loss tensor");
  CNN_CHECK(loss.numel() == 1, "Tape::backward: the loss must be a scalar (one element) to seed grad 1, got ",
            loss.str(), "; pass an explicit seed for other shapes");
  backward(loss, Tensor::full(loss.shape(), 1.0, loss.dtype(), loss.device(), "grad seed"), retain_graph);
}

void Tape::backward(const Tensor& root, const Tensor& seed, bool retain_graph) {
  CNN_CHECK(root.defined() && seed.defined(), "Tape::backward: undefined root or seed tensor");
  CNN_CHECK(!freed_,
            "Tape::backward: this tape was already replayed and its nodes freed; call "
            "backward(..., retain_graph=true) to replay a tape twice");
  CNN_CHECK(root.requires_grad(), "Tape::backward: ", root.str(),
            " does not require grad (no recorded op produced it from a tensor with requires_grad; was the op run "
            "with a null tape or under NoGradGuard?)");
  CNN_CHECK(seed.shape() == root.shape(), "Tape::backward: seed shape ", shape_str(seed.shape()),
            " does not match root shape ", shape_str(root.shape()));
  CNN_CHECK(seed.device() == root.device(), "Tape::backward: seed on ", seed.device().str(), ", root on ",
            root.device().str());
  NoGradGuard no_grad;  // backward closures must not record
  if (observer_ != nullptr) observer_->on_backward_begin();
  AutogradMeta* root_meta = root.autograd_meta().get();
  if (root_meta->is_leaf) {
    accumulate_leaf(*root_meta, seed);
    if (observer_ != nullptr) observer_->on_backward_end();
    return;
  }
  bool found = false;
  for (const Node& n : nodes_) {
    for (const OutputSlot& o : n.outputs) found = found || o.meta.get() == root_meta;
  }
  CNN_CHECK(found, "Tape::backward: ", root.str(), " was not produced by an op recorded on this tape");

  std::unordered_map<AutogradMeta*, Tensor> grads;
  grads.emplace(root_meta, seed.to(root.dtype()));
  // Without retain_graph each node's closure is dropped once it has run (or been passed over), so the activations it
  // saved are freed as the replay moves back through the step rather than all at its end: the step's peak memory is
  // then the forward's saved tensors, not those plus every gradient the backward makes.
  if (!retain_graph) freed_ = true;
  for (auto it = nodes_.rbegin(); it != nodes_.rend(); ++it) {
    Node& node = *it;
    std::vector<Tensor> grad_out;
    bool any = false;
    for (const OutputSlot& o : node.outputs) {
      auto g = grads.find(o.meta.get());
      if (g != grads.end()) {
        grad_out.push_back(g->second);
        grads.erase(g);  // every consumer of this output was recorded later and has already run
        any = true;
      } else {
        grad_out.push_back(Tensor());
      }
    }
    if (!any) {
      if (!retain_graph) node.backward = nullptr;
      continue;
    }
    for (size_t i = 0; i < grad_out.size(); ++i) {
      const OutputSlot& o = node.outputs[i];
      if (!grad_out[i].defined()) grad_out[i] = Tensor::zeros(o.shape, o.dtype, o.device, "zero grad");
    }
    if (observer_ != nullptr) observer_->on_node_begin(node.op, node.tag);
    std::vector<Tensor> grad_in = node.backward(grad_out);
    if (!retain_graph) node.backward = nullptr;
    grad_out.clear();
    if (observer_ != nullptr) observer_->on_node_end(node.op, node.tag);
    CNN_CHECK(grad_in.size() == node.inputs.size(), "Tape::backward(", node.op, "): backward returned ", grad_in.size(),
              " gradients for ", node.inputs.size(), " inputs");
    for (size_t i = 0; i < grad_in.size(); ++i) {
      const InputSlot& in = node.inputs[i];
      if (!in.meta || !in.meta->requires_grad || !grad_in[i].defined()) continue;
      CNN_CHECK(grad_in[i].shape() == in.shape, "Tape::backward(", node.op, "): gradient of input ", i, " has shape ",
                shape_str(grad_in[i].shape()), ", input has ", shape_str(in.shape));
      if (in.meta->is_leaf) {
        accumulate_leaf(*in.meta, grad_in[i]);
      } else {
        accumulate_inner(grads, in.meta.get(), std::move(grad_in[i]));
      }
    }
  }
  if (!retain_graph) nodes_.clear();
  if (observer_ != nullptr) observer_->on_backward_end();
}

void Tape::clear() {
  nodes_.clear();
  freed_ = false;
}

}  // namespace cnn
