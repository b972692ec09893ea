# torch.nn.functional.linear at MiniLM's layer shapes (batch_bench's "minilm" set): MKL's float GEMM, the
# peer of float_gemm.h. Usage: .venv/bin/python bench/kernels/torch_linear.py [threads=1]
import torch, time, sys
torch.set_num_threads(int(sys.argv[1]) if len(sys.argv)>1 else 1)
shapes=[(1152,384),(384,384),(1536,384),(384,1536)]
for n in [128,512,2048]:
    tf=0;tt=0
    for r,c in shapes:
        W=torch.randn(r,c); x=torch.randn(n,c)
        torch.nn.functional.linear(x,W)
        ts=[]
        for i in range(5):
            t=time.perf_counter(); torch.nn.functional.linear(x,W); ts.append(time.perf_counter()-t)
        ts.sort(); t=ts[2]; f=2*r*c*n; tf+=f; tt+=t
    print(f"torch threads={torch.get_num_threads()} n={n}: all shapes {tf/tt/1e9:.1f} GFLOP/s")
