FROM --platform=linux/x86_64 exec.env.x86_64.0c8d6b488a29dac31dbbc7:latest

COPY ./setup_repo.sh /root/
RUN /bin/bash /root/setup_repo.sh

WORKDIR /testbed/
