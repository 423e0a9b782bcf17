#include "textflag.h"

// func rawSyscall(trap, a1, a2, a3, a4, a5, a6 uintptr) (r, errno uintptr)
//
// A system call without the Go scheduler's bookkeeping, as
// syscall.RawSyscall6, in one function instead of three (see raw.go).
TEXT ·rawSyscall(SB),NOSPLIT,$0-72
	MOVQ	a1+8(FP), DI
	MOVQ	a2+16(FP), SI
	MOVQ	a3+24(FP), DX
	MOVQ	a4+32(FP), R10
	MOVQ	a5+40(FP), R8
	MOVQ	a6+48(FP), R9
	MOVQ	trap+0(FP), AX
	SYSCALL
	CMPQ	AX, $0xfffffffffffff001
	JLS	ok
	MOVQ	$-1, r+56(FP)
	NEGQ	AX
	MOVQ	AX, errno+64(FP)
	RET
ok:
	MOVQ	AX, r+56(FP)
	MOVQ	$0, errno+64(FP)
	RET

// func rawSyscallTSC(trap, a1, a2, a3, a4, a5, a6 uintptr) (r, errno uintptr, tsc int64)
//
// rawSyscall, then the time-stamp counter read as the call returns (the
// clock's reading of the call's end, replay.Clock.At).
TEXT ·rawSyscallTSC(SB),NOSPLIT,$0-80
	MOVQ	a1+8(FP), DI
	MOVQ	a2+16(FP), SI
	MOVQ	a3+24(FP), DX
	MOVQ	a4+32(FP), R10
	MOVQ	a5+40(FP), R8
	MOVQ	a6+48(FP), R9
	MOVQ	trap+0(FP), AX
	SYSCALL
	MOVQ	AX, CX
	RDTSC
	SHLQ	$32, DX
	ORQ	DX, AX
	MOVQ	AX, tsc+72(FP)
	CMPQ	CX, $0xfffffffffffff001
	JLS	ok
	MOVQ	$-1, r+56(FP)
	NEGQ	CX
	MOVQ	CX, errno+64(FP)
	RET
ok:
	MOVQ	CX, r+56(FP)
	MOVQ	$0, errno+64(FP)
	RET
