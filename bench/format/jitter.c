/* Measures the gap (end of one call to start of the next) and the duration
   of 4 KiB pwrite and pread calls, in ns, as CLOCK_MONOTONIC reports them.
   Output: "w|r gap dur" per call. */
#include <stdio.h>
#include <time.h>
#include <fcntl.h>
#include <unistd.h>
static long long ns(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1000000000LL+t.tv_nsec;}
int main(int argc,char**argv){int n=20000;int fd=open(argc>1?argv[1]:"jitter.tmp",O_RDWR|O_CREAT|O_TRUNC,0644);static char b[4096];for(int i=0;i<4096;i++)b[i]=i*7+1;
 long long prev=ns();for(int i=0;i<n;i++){long long s=ns();pwrite(fd,b,4096,(long long)i*4096);long long e=ns();printf("w %lld %lld\n",s-prev,e-s);prev=e;}
 prev=ns();for(int i=0;i<n;i++){long long s=ns();pread(fd,b,4096,(long long)i*4096);long long e=ns();printf("r %lld %lld\n",s-prev,e-s);prev=e;}
 close(fd);unlink(argc>1?argv[1]:"jitter.tmp");return 0;}
